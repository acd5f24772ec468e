"""The session-document store: every message of the project's agent transcripts.

One SQLite file per project next to its markdown index
(``<index dir>/<collection>.sessions.sqlite``), so the markdown index stays
rebuildable from markdown and this one from the transcripts.

The tables deliberately reuse the main index's names and filter columns
(``chunks``, ``chunks_fts``, ``tombstones``, ``meta`` with the same keys,
the ``chunks_filter`` covering index): the lexical leg (``lexical.py``), the
in-memory vector matrix and its incremental refresh (``dense.py``,
``dense_sync.py``) and fusion (``fusion.py``) then run on this file
unchanged instead of being forked. The column mapping:

- ``kind`` is always ``"session"``;
- ``source`` holds the document's role (user | assistant | summary | tool):
  the role filter is the shared ``source_prefix`` filter, and no role is a
  prefix of another;
- ``date`` is the UTC ISO timestamp (string comparison = time order);
- ``session`` is the session id; ``transcript`` is the file path.

Uniqueness on (transcript, entry_id, part): a resumed backfill never
duplicates a row, and a row stored with its vector is never embedded again.
``part`` is "" for the entry's own text and "tool" for the tool calls an
assistant entry carries (stored apart so they can stay unembedded).

A damaged file is handled like the main index's (same machinery,
``sqlite_file.py`` and ``recovery.py``): moved aside to
``<name>.corrupt-<UTC stamp>``, recreated empty, never repaired, and the
damaged copy deleted once the fresh file is open.
Every source's offset goes with it, so the next backfill or sweep reads
every transcript again from its first byte; ``rebuilt_reason`` says why
until a user-facing surface shows it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.clock import SYSTEM_CLOCK, utc_z
from memlane.core.errors import IndexCorruptError
from memlane.core.faults import step
from memlane.core.settings import IndexSettings, SessionsSettings
from memlane.core.types import SearchMode
from memlane.index import lexical, relevance, schema
from memlane.index.base import DimensionMismatchError, IndexBusyError, SearchFilters
from memlane.index.dense import DenseMatrix, vector_to_blob
from memlane.index.dense_sync import synced_matrix
from memlane.index.fusion import fusion_method
from memlane.index.sqlite import candidate_count
from memlane.index.sqlite_file import BUSY_TIMEOUT_S as BUSY_TIMEOUT_S
from memlane.index.sqlite_file import OPEN_RETRY_S as OPEN_RETRY_S
from memlane.index.sqlite_file import TOMBSTONE_KEEP_GENERATIONS as TOMBSTONE_KEEP_GENERATIONS
from memlane.index.sqlite_file import TOMBSTONE_PRUNE_EVERY as TOMBSTONE_PRUNE_EVERY
from memlane.index.sqlite_file import SqliteFile

log = logging.getLogger(__name__)

# 2: sources.tail_hash (the rewrite check's hash of the bytes before the
# offset). Version 1 files are upgraded in place (see _MIGRATIONS).
SESSIONS_SCHEMA_VERSION = 2
SESSIONS_SUFFIX = ".sessions.sqlite"
ROLES = ("user", "assistant", "summary", "tool")
DOC_KIND = "session"
_REBUILD_HINT = "delete the file; `memlane sessions backfill` rebuilds it from the transcripts"

_TABLES_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value)",
    # One row per transcript file: how far it was read and what it looked
    # like then, to tell an append (read on from offset) from a rewrite
    # (size shrank, other inode, other first bytes, other bytes just before
    # the offset: read it whole again).
    """
    CREATE TABLE IF NOT EXISTS sources (
        path TEXT PRIMARY KEY,
        format TEXT NOT NULL,
        session_id TEXT,
        offset INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        head_len INTEGER NOT NULL,
        head_hash TEXT NOT NULL,
        garbage INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT,
        tail_hash TEXT NOT NULL DEFAULT ''
    )
    """,
    # The vector BLOB last: metadata reads never touch its overflow pages.
    """
    CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY,
        doc_key TEXT NOT NULL UNIQUE,
        transcript TEXT NOT NULL,
        entry_id TEXT NOT NULL,
        part TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        date TEXT,
        session TEXT,
        content_hash TEXT NOT NULL,
        content TEXT NOT NULL,
        embed INTEGER NOT NULL,
        vec_gen INTEGER,
        vector BLOB,
        UNIQUE (transcript, entry_id, part)
    )
    """,
    "CREATE INDEX IF NOT EXISTS chunks_vec_gen ON chunks(vec_gen)",
    # Rows still waiting for a vector (the backfill's resume point).
    "CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(id) WHERE embed = 1 AND vec_gen IS NULL",
    "CREATE INDEX IF NOT EXISTS chunks_session ON chunks(session, date)",
    # Same covering index as the main index: lexical.filter_sql names it.
    "CREATE INDEX IF NOT EXISTS chunks_filter ON chunks(id, kind, date, session, source)",
    f"""
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
        content, content='chunks', content_rowid='id', tokenize='{schema.FTS_TOKENIZER}'
    )
    """,
    "CREATE TABLE IF NOT EXISTS tombstones (id INTEGER NOT NULL, gen INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tombstones_gen ON tombstones(gen)",
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, content) VALUES (new.id, new.content);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO tombstones(id, gen)
        SELECT old.id, value FROM meta WHERE key = 'generation' AND old.vec_gen IS NOT NULL;
    END
    """,
)
_DROP_DDL = (
    "DROP TABLE IF EXISTS chunks_fts",
    "DROP TABLE IF EXISTS chunks",
    "DROP TABLE IF EXISTS tombstones",
    "DROP TABLE IF EXISTS sources",
)

# Upgrades in place, by the version they start from: sessions data is
# expensive to rebuild (every vector re-embedded), so a new column must not
# cost a re-read. '' = "not recorded yet": the rewrite check then only looks
# for the line end, and the next read of that file records the hash.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE sources ADD COLUMN tail_hash TEXT NOT NULL DEFAULT ''",),
}

_SOURCE_COLUMNS = (
    "path, format, session_id, offset, size, mtime_ns, inode, head_len, head_hash, "
    "garbage, unknown, tail_hash"
)

_DOC_COLUMNS = "id, doc_key, transcript, entry_id, part, source, date, session, content"

# Which secret redaction the stored texts went through (meta key
# ``docs.redaction``): rows stored before it (or under an older number) are
# rescanned once and rewritten where a secret is found, and until then every
# text read out of the store is redacted on its way out. Bump it when the
# redaction rules learn a kind that old rows may hold.
META_REDACTION = "docs.redaction"
REDACTION_VERSION = 1
_REDACT_BATCH = 200
_REWRITE_COLUMNS = (
    "doc_key, transcript, entry_id, part, kind, source, date, session, content_hash, content, embed"
)


def doc_key(transcript: str, entry_id: str, part: str = "") -> str:
    """The 16-hex handle of a document (what a hit's chunk hash shows)."""
    raw = f"session:{transcript}\0{entry_id}\0{part}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class SessionDoc:
    """A document to store: one message (or its tool calls, or a summary)."""

    transcript: str
    entry_id: str
    session_id: str | None
    role: str  # user | assistant | summary | tool
    timestamp: str | None  # UTC ISO "...Z"
    text: str
    embed: bool  # gets a vector (else lexical only)
    part: str = ""

    @property
    def key(self) -> str:
        return doc_key(self.transcript, self.entry_id, self.part)


@dataclass(frozen=True)
class StoredDoc:
    key: str
    transcript: str
    entry_id: str
    part: str
    role: str
    timestamp: str | None
    session_id: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "session_id": self.session_id,
            "entry_id": self.entry_id,
            "part": self.part,
            "role": self.role,
            "timestamp": self.timestamp,
            "transcript": self.transcript,
            "text": self.text,
        }


@dataclass(frozen=True)
class ScoredDoc:
    doc: StoredDoc
    score: float  # in [0, 1]


@dataclass(frozen=True)
class SessionFilters:
    session: str | None = None
    after: str | None = None  # inclusive, compared with the UTC ISO timestamp
    before: str | None = None  # exclusive
    role: str | None = None

    def shared(self) -> SearchFilters | None:
        filters = SearchFilters(
            source_prefix=self.role, session=self.session, after=self.after, before=self.before
        )
        return None if filters.is_empty() else filters


@dataclass(frozen=True)
class SourceState:
    """How far one transcript file was read, and how it looked then."""

    path: str
    format: str  # "pi" | "claude-code"
    session_id: str | None
    offset: int
    size: int
    mtime_ns: int
    inode: int
    head_len: int
    head_hash: str
    garbage: int = 0
    unknown: int = 0
    # Hash of the (up to) TAIL_BYTES bytes just before ``offset``; "" when
    # offset is 0 or the row predates schema version 2.
    tail_hash: str = ""


@dataclass(frozen=True)
class SessionInfo:
    """One past session, for the primer."""

    session_id: str
    transcript: str
    first_at: str | None
    last_at: str | None
    messages: int
    first_user: str  # the first user message: what the session set out to do
    last_summary: str | None  # the latest compaction/branch summary, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "transcript": self.transcript,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "messages": self.messages,
            "first_user": self.first_user,
            "last_summary": self.last_summary,
        }


@dataclass
class BatchWrite:
    """One transaction: documents, their vectors, and source progress."""

    docs: list[SessionDoc] = field(default_factory=list)
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    states: list[SourceState] = field(default_factory=list)
    replace: set[str] = field(default_factory=set)  # transcripts whose old rows go first


def sessions_path_for(index_path: Path) -> Path:
    """``<index dir>/<collection>.sessions.sqlite`` for ``<index dir>/<collection>.sqlite``."""
    name = index_path.name
    stem = name[: -len(".sqlite")] if name.endswith(".sqlite") else name
    return index_path.with_name(stem + SESSIONS_SUFFIX)


class _SessionLexicalLeg(lexical.LexicalLeg):
    """The shared lexical leg, plus a rowid window for a session filter.

    A session's messages were inserted together, so its rows sit in a narrow
    rowid range; FTS5 restricts a MATCH to a rowid range inside its doclists,
    before any join. Without the window every match of a common term was
    joined and checked (33 ms at 100k documents for a session filter).
    """

    def rank(
        self,
        conn: sqlite3.Connection,
        text: str,
        n: int,
        filters: SearchFilters | None,
        cache_key: object,
    ) -> lexical.LexicalRanking:
        if filters is None or not filters.session:
            return super().rank(conn, text, n, filters, cache_key)
        query = self.prepare(conn, text, cache_key)
        low, high = conn.execute(
            "SELECT min(id), max(id) FROM chunks WHERE session = ?", (filters.session,)
        ).fetchone()
        match = query.match
        if low is None or match is None:
            return lexical.LexicalRanking([], query)
        conditions, values = lexical.filter_sql(filters)
        sql = (
            "SELECT chunks_fts.rowid, rank FROM chunks_fts JOIN chunks INDEXED BY chunks_filter "
            "ON chunks.id = chunks_fts.rowid WHERE chunks_fts MATCH ? "
            "AND chunks_fts.rowid >= ? AND chunks_fts.rowid <= ? AND "
            + " AND ".join(conditions)
            + " ORDER BY rank, chunks_fts.rowid LIMIT ?"
        )
        params = [match, low, high, *values, n]
        hits = [(row[0], -float(row[1])) for row in conn.execute(sql, params)]
        return lexical.LexicalRanking(hits, query)


def _row_doc(row: Sequence[Any]) -> StoredDoc:
    return StoredDoc(
        key=row[1],
        transcript=row[2],
        entry_id=row[3],
        part=row[4],
        role=row[5],
        timestamp=row[6],
        session_id=row[7],
        text=row[8],
    )


class SessionStore(SqliteFile):
    """FTS5 + numpy hybrid search over session documents, in one SQLite file."""

    _label = "session index"
    FAULT_AREA = "sessions_index"
    # A lock error whose message reads like damage is still a lock here.
    _busy_before_damage = True

    def __init__(
        self,
        path: Path | str,
        index_settings: IndexSettings | None = None,
        sessions_settings: SessionsSettings | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """``redact``: the secret redaction the stored texts must have been
        through (None: texts are stored and shown as given)."""
        self.index_settings = index_settings or IndexSettings()
        self._redact = redact
        self._rows_redacted = redact is None
        self.settings = sessions_settings or SessionsSettings()
        self._fuse = fusion_method(self.index_settings.fusion)
        # Damage bookkeeping, per process (the store is one per process, see
        # engine.sessions.open_store): why the file was recreated
        # (``rebuilt_reason``, SqliteFile), until a user-facing surface pops
        # it; how many times (the ingestor compares it around a pass to spot
        # a rebuild in the middle of one); whether a full pass has read every
        # transcript again since.
        self.rebuilds = 0
        self.reread_since_rebuild = True
        super().__init__(path, _SessionLexicalLeg())

    # -- schema, damage (SqliteFile hooks) ------------------------------------------

    def _validate_or_create(self) -> None:
        conn = self._connection()
        self._ensure_schema(conn)
        lexical.install(conn)

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
        if row is not None and self._version(conn) == SESSIONS_SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have
            # created or upgraded the file since the check above.
            version = self._version(conn) if row is not None else None
            if version is not None and version in _MIGRATIONS:
                for step in range(version, SESSIONS_SCHEMA_VERSION):
                    for ddl in _MIGRATIONS[step]:
                        conn.execute(ddl)
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?",
                    (SESSIONS_SCHEMA_VERSION, schema.META_SCHEMA_VERSION),
                )
            elif version is not None and version != SESSIONS_SCHEMA_VERSION:
                # A layout with no migration: derived data, dropped and
                # re-read from the transcripts.
                for ddl in _DROP_DDL:
                    conn.execute(ddl)
                conn.execute("DELETE FROM meta")
            for ddl in _TABLES_DDL:
                conn.execute(ddl)
            defaults: dict[str, object] = {
                schema.META_SCHEMA_VERSION: SESSIONS_SCHEMA_VERSION,
                schema.META_GENERATION: 0,
                schema.META_EPOCH: secrets.token_hex(8),
                schema.META_TOMBSTONE_FLOOR: 0,
            }
            conn.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", list(defaults.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _version(conn: sqlite3.Connection) -> object:
        found = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
        ).fetchone()
        return None if found is None else found[0]

    def _record_rebuild(self, reason: str, target: Path | None) -> None:
        if target is not None:
            detail = f"{reason}; the damaged file was deleted"
        else:
            detail = f"{reason}; another process had already recreated it"
        self._mark_rebuilt(detail)

    def _mark_rebuilt(self, detail: str) -> None:
        self._dense = None
        self.rebuilt_reason = detail
        self.rebuilds += 1
        self.reread_since_rebuild = False
        # info, as the main index logs it: the CLI has no log handler (a
        # warning would print a second, unprefixed line); the user hears it
        # from damage_notice, hosts that configure logging get it here too.
        log.info("session index %s was damaged and recreated: %s", self.path.name, detail)

    def _replaced_on_disk(self, rebuilt_meanwhile: bool) -> None:
        if not rebuilt_meanwhile:
            self._mark_rebuilt("another process replaced the file (rebuilt after damage)")

    def _busy_error(self) -> IndexBusyError:
        return IndexBusyError(
            f"session index {self.path} stayed locked by another process",
            hint="another memlane is ingesting transcripts; retry shortly",
        )

    def _recreate_failed(self, exc: BaseException) -> IndexCorruptError:
        return IndexCorruptError(
            f"session index {self.path} is damaged and could not be recreated: {exc}",
            hint=_REBUILD_HINT,
        )

    def _damaged_after_recreate(self, reason: str) -> IndexCorruptError:
        return IndexCorruptError(
            f"session index {self.path} is damaged right after being recreated: {reason}",
            hint=_REBUILD_HINT,
        )

    # -- meta (model binding, sweeper status) -----------------------------------

    def meta(self) -> dict[str, Any]:
        return self._run(self._meta)

    def set_meta(self, values: Mapping[str, object]) -> None:
        """Write bookkeeping rows (sweeper status) without bumping the generation."""

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items())
                )
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

        self._run(op)

    # -- redaction of stored texts ---------------------------------------------------

    def rows_redacted(self) -> bool:
        """Whether every stored text went through the current redaction."""
        return self._rows_redacted or self._run(self._redacted_in)

    def _redacted_in(self, conn: sqlite3.Connection) -> bool:
        if not self._rows_redacted:
            # Once true it stays true: new rows come redacted, and a cleared
            # or recreated file is rescanned (empty) before it is written.
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_REDACTION,)).fetchone()
            self._rows_redacted = row is not None and row[0] == REDACTION_VERSION
        return self._rows_redacted

    def _shown(self, conn: sqlite3.Connection, text: str) -> str:
        """*text* as a reader may see it: redacted while old rows may hold secrets."""
        if self._redact is None or self._redacted_in(conn):
            return text
        return self._redact(text)

    def redact_stored(self) -> int:
        """Rescan every stored text and rewrite the rows that hold a secret.

        Returns how many rows were rewritten. A rewritten row is deleted and
        inserted again (the triggers drop its old FTS entry and tombstone its
        vector) without a vector, so the next embedding pass embeds the
        redacted text. Batches commit one by one: a kill keeps what is done
        and the next pass goes on (rows already redacted do not change).
        With ``secure_delete`` the freed pages are zeroed; the FTS segments
        are merged and the WAL checkpointed, so the old text is gone from
        the file, not only from search.
        """
        redact = self._redact
        if redact is None or self.rows_redacted():
            return 0

        def op(conn: sqlite3.Connection) -> int:
            previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
            conn.execute("PRAGMA secure_delete=ON")
            try:
                rewritten = self._rewrite_redacted(conn, redact)
                if rewritten:
                    with self._write(conn):
                        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (META_REDACTION, REDACTION_VERSION),
                )
                step("sessions.redact.done")
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                conn.execute(f"PRAGMA secure_delete={int(previous)}")
            return rewritten

        rewritten = self._run(op)
        self._rows_redacted = True
        return rewritten

    def _rewrite_redacted(self, conn: sqlite3.Connection, redact: Callable[[str], str]) -> int:
        rewritten = 0
        last = 0
        while True:
            rows = conn.execute(
                "SELECT id, content FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                (last, _REDACT_BATCH),
            ).fetchall()
            if not rows:
                return rewritten
            last = rows[-1][0]
            read = dict(rows)
            changed = [
                (rowid, new) for rowid, text in read.items() if (new := redact(text)) != text
            ]
            if not changed:
                continue
            with self._write(conn):
                for rowid, new in changed:
                    old = conn.execute(
                        f"SELECT {_REWRITE_COLUMNS} FROM chunks WHERE id = ?", (rowid,)
                    ).fetchone()
                    if old is None or old[9] != read[rowid]:
                        continue  # changed by another process since the read
                    conn.execute("DELETE FROM chunks WHERE id = ?", (rowid,))
                    conn.execute(
                        f"INSERT INTO chunks({_REWRITE_COLUMNS}) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (*old[:8], content_hash(new), new, old[10]),
                    )
                    rewritten += 1
            step("sessions.redact.batch")

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind the vectors to ``model``; another model drops every vector
        (documents stay and are embedded again). True when vectors were dropped."""

        def op(conn: sqlite3.Connection) -> bool:
            meta = self._meta(conn)
            stored_model = meta.get(schema.META_MODEL)
            stored_dim = meta.get(schema.META_DIMENSION)
            dim_conflict = (
                dimension is not None and isinstance(stored_dim, int) and stored_dim != dimension
            )
            if stored_model == model and not dim_conflict and (dimension is None or stored_dim):
                return False
            with self._write(conn):
                changed = (stored_model is not None and stored_model != model) or dim_conflict
                if changed:
                    conn.execute("UPDATE chunks SET vector = NULL, vec_gen = NULL")
                    # A new epoch makes every process reload its matrix.
                    conn.execute(
                        "UPDATE meta SET value = ? WHERE key = ?",
                        (secrets.token_hex(8), schema.META_EPOCH),
                    )
                    conn.execute("DELETE FROM tombstones")
                conn.executemany(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    [
                        (schema.META_MODEL, model),
                        (schema.META_DIMENSION, dimension if dimension else stored_dim),
                    ],
                )
            if changed:
                self._dense = None
            return changed

        return self._run(op)

    def clear(self) -> None:
        """Drop every document, vector and source record (``sessions reindex``)."""

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                for ddl in _DROP_DDL:
                    conn.execute(ddl)
                for ddl in _TABLES_DDL:
                    conn.execute(ddl)
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?",
                    (secrets.token_hex(8), schema.META_EPOCH),
                )
                conn.execute(
                    "DELETE FROM meta WHERE key IN (?, ?)",
                    (schema.META_MODEL, schema.META_DIMENSION),
                )
            self._dense = None
            self._lexical.reset()
            lexical.install(conn)

        self._run(op)

    def checkpoint(self) -> None:
        """Fold the WAL into the file and truncate it (after a long backfill
        the WAL holds megabytes of pages already in the file). Best effort:
        skipped while another process holds the file busy."""

        def op(conn: sqlite3.Connection) -> None:
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

        self._run(op)

    # -- sources -----------------------------------------------------------------

    def sources(self) -> dict[str, SourceState]:
        def op(conn: sqlite3.Connection) -> dict[str, SourceState]:
            rows = conn.execute(f"SELECT {_SOURCE_COLUMNS} FROM sources").fetchall()
            return {row[0]: SourceState(*row) for row in rows}

        return self._run(op)

    def source(self, path: str) -> SourceState | None:
        def op(conn: sqlite3.Connection) -> SourceState | None:
            row = conn.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE path = ?", (path,)
            ).fetchone()
            return SourceState(*row) if row is not None else None

        return self._run(op)

    def existing(self, keys: Iterable[str]) -> dict[str, bool]:
        """doc key -> has a vector, for the keys already stored."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def op(conn: sqlite3.Connection) -> dict[str, bool]:
            out: dict[str, bool] = {}
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ", ".join("?" * len(part))
                for key, has_vector in conn.execute(
                    f"SELECT doc_key, vec_gen IS NOT NULL FROM chunks WHERE doc_key IN ({marks})",
                    part,
                ):
                    out[key] = bool(has_vector)
            return out

        return self._run(op)

    # -- writes ------------------------------------------------------------------

    def commit(self, batch: BatchWrite) -> int:
        """Apply one batch atomically; returns the documents newly inserted.

        Existing (transcript, entry, part) rows are kept as they are (OR
        IGNORE), except that a vector in the batch fills a row stored
        without one. Transcripts in ``replace`` lose their old rows first.
        """
        arrays = {
            key: np.asarray(v, dtype=np.float32).reshape(-1) for key, v in batch.vectors.items()
        }

        def op(conn: sqlite3.Connection) -> int:
            with self._write(conn) as generation:
                blobs = self._blobs(conn, arrays)
                for transcript in sorted(batch.replace):
                    conn.execute("DELETE FROM chunks WHERE transcript = ?", (transcript,))
                rows = []
                for doc in batch.docs:
                    blob = blobs.get(doc.key)
                    rows.append(
                        (
                            doc.key,
                            doc.transcript,
                            doc.entry_id,
                            doc.part,
                            DOC_KIND,
                            doc.role,
                            doc.timestamp,
                            doc.session_id,
                            content_hash(doc.text),
                            doc.text,
                            1 if doc.embed else 0,
                            generation if blob is not None else None,
                            blob,
                        )
                    )
                cursor = conn.executemany(
                    "INSERT OR IGNORE INTO chunks(doc_key, transcript, entry_id, part, kind, "
                    "source, date, session, content_hash, content, embed, vec_gen, vector) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                # rowcount counts the statement's own inserts, not its triggers'.
                inserted = max(cursor.rowcount, 0)
                if blobs:
                    conn.executemany(
                        "UPDATE chunks SET vector = ?, vec_gen = ? "
                        "WHERE doc_key = ? AND vec_gen IS NULL",
                        [(blob, generation, key) for key, blob in blobs.items()],
                    )
                now = utc_z(SYSTEM_CLOCK.now())
                conn.executemany(
                    "INSERT INTO sources(path, format, session_id, offset, size, mtime_ns, inode, "
                    "head_len, head_hash, garbage, unknown, updated_at, tail_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(path) DO UPDATE SET format = excluded.format, "
                    "session_id = excluded.session_id, offset = excluded.offset, "
                    "size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode, "
                    "head_len = excluded.head_len, head_hash = excluded.head_hash, "
                    "garbage = excluded.garbage, unknown = excluded.unknown, "
                    "updated_at = excluded.updated_at, tail_hash = excluded.tail_hash",
                    [
                        (
                            s.path,
                            s.format,
                            s.session_id,
                            s.offset,
                            s.size,
                            s.mtime_ns,
                            s.inode,
                            s.head_len,
                            s.head_hash,
                            s.garbage,
                            s.unknown,
                            now,
                            s.tail_hash,
                        )
                        for s in batch.states
                    ],
                )
            return inserted

        return self._run(op)

    def remove_sources(self, paths: Iterable[str]) -> int:
        targets = [(p,) for p in dict.fromkeys(paths)]
        if not targets:
            return 0

        def op(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                removed = conn.executemany("DELETE FROM chunks WHERE transcript = ?", targets)
                conn.executemany("DELETE FROM sources WHERE path = ?", targets)
            return max(removed.rowcount, 0)

        return self._run(op)

    def remove_docs(self, keys: Iterable[str]) -> int:
        """Delete these documents, vectors and all; returns how many were stored."""
        targets = [(key,) for key in dict.fromkeys(keys)]
        if not targets:
            return 0

        def op(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                removed = conn.executemany("DELETE FROM chunks WHERE doc_key = ?", targets)
            return max(removed.rowcount, 0)

        return self._run(op)

    def set_vectors(self, vectors: Mapping[str, npt.ArrayLike]) -> None:
        arrays = {k: np.asarray(v, dtype=np.float32).reshape(-1) for k, v in vectors.items()}
        if arrays:
            self.commit(BatchWrite(vectors=arrays))

    def _blobs(
        self, conn: sqlite3.Connection, arrays: Mapping[str, npt.NDArray[np.float32]]
    ) -> dict[str, bytes]:
        if not arrays:
            return {}
        row = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_DIMENSION,)
        ).fetchone()
        dimension = row[0] if row is not None else None
        sizes = {a.size for a in arrays.values()}
        expected = dimension if isinstance(dimension, int) else next(iter(sizes))
        if sizes != {expected}:
            raise DimensionMismatchError(
                f"vector dimension {sorted(sizes - {expected})[0]} does not match the "
                f"session index dimension {expected}",
                hint="the embedder changed; run `memlane sessions reindex`",
            )
        for key, array in arrays.items():
            if not bool(np.all(np.isfinite(array))):
                raise ValueError(f"vector for session document {key} is not finite")
        if not isinstance(dimension, int):
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (schema.META_DIMENSION, expected),
            )
        return {key: vector_to_blob(array) for key, array in arrays.items()}

    # -- reads -------------------------------------------------------------------

    def pending_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(doc key, text) of documents that should have a vector and do not."""

        def op(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = conn.execute(
                "SELECT doc_key, content FROM chunks WHERE embed = 1 AND vec_gen IS NULL "
                "ORDER BY id LIMIT ?",
                (-1 if limit is None else max(limit, 0),),
            ).fetchall()
            return [(row[0], self._shown(conn, row[1])) for row in rows]

        return self._run(op)

    def count(self) -> int:
        return self._run(lambda c: int(c.execute("SELECT count(*) FROM chunks").fetchone()[0]))

    def get(self, key: str) -> StoredDoc | None:
        def op(conn: sqlite3.Connection) -> StoredDoc | None:
            row = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM chunks WHERE doc_key = ?", (key,)
            ).fetchone()
            return self._doc(conn, row) if row is not None else None

        return self._run(op)

    def find_entry(self, entry_id: str) -> list[StoredDoc]:
        """Documents of a transcript entry id (a message id as pi/Claude wrote it)."""

        def op(conn: sqlite3.Connection) -> list[StoredDoc]:
            rows = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM chunks WHERE entry_id = ? ORDER BY part, id",
                (entry_id,),
            ).fetchall()
            return [self._doc(conn, row) for row in rows]

        return self._run(op)

    def docs_of(self, transcript: str) -> list[StoredDoc]:
        def op(conn: sqlite3.Connection) -> list[StoredDoc]:
            rows = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM chunks WHERE transcript = ? ORDER BY id",
                (transcript,),
            ).fetchall()
            return [self._doc(conn, row) for row in rows]

        return self._run(op)

    def recent_sessions(self, n: int, exclude: str | None = None) -> list[SessionInfo]:
        """The ``n`` sessions with the latest messages, newest first."""

        def op(conn: sqlite3.Connection) -> list[SessionInfo]:
            with self._read(conn):
                rows = conn.execute(
                    "SELECT session, min(transcript), min(date), max(date), count(*) FROM chunks "
                    "WHERE session IS NOT NULL AND (? IS NULL OR session != ?) "
                    "GROUP BY session ORDER BY max(date) DESC LIMIT ?",
                    (exclude, exclude, max(n, 0)),
                ).fetchall()
                out = []
                for session, transcript, first_at, last_at, messages in rows:
                    first = conn.execute(
                        "SELECT content FROM chunks WHERE session = ? AND source = 'user' "
                        "ORDER BY date, id LIMIT 1",
                        (session,),
                    ).fetchone()
                    summary = conn.execute(
                        "SELECT content FROM chunks WHERE session = ? AND source = 'summary' "
                        "ORDER BY date DESC, id DESC LIMIT 1",
                        (session,),
                    ).fetchone()
                    out.append(
                        SessionInfo(
                            session_id=session,
                            transcript=transcript,
                            first_at=first_at,
                            last_at=last_at,
                            messages=int(messages),
                            first_user=self._shown(conn, first[0]) if first else "",
                            last_summary=self._shown(conn, summary[0]) if summary else None,
                        )
                    )
                return out

        return self._run(op)

    def stats(self) -> dict[str, Any]:
        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            with self._read(conn):
                docs = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                embedded = conn.execute(
                    "SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL"
                ).fetchone()[0]
                pending = conn.execute(
                    "SELECT count(*) FROM chunks WHERE embed = 1 AND vec_gen IS NULL"
                ).fetchone()[0]
                sessions = conn.execute(
                    "SELECT count(DISTINCT session) FROM chunks WHERE session IS NOT NULL"
                ).fetchone()[0]
                by_role = dict(
                    conn.execute("SELECT source, count(*) FROM chunks GROUP BY source").fetchall()
                )
                sources, garbage, unknown = conn.execute(
                    "SELECT count(*), coalesce(sum(garbage), 0), coalesce(sum(unknown), 0) "
                    "FROM sources"
                ).fetchone()
                meta = self._meta(conn)
            size = 0
            for suffix in ("", "-wal"):
                with contextlib.suppress(OSError):
                    size += self.path.with_name(self.path.name + suffix).stat().st_size
            extra: dict[str, Any] = {}
            if self.rebuilt_reason is not None:
                # Peeked, not popped: `memlane status --json` shows it and a
                # later sessions command still gets to tell the user.
                extra["rebuilt"] = self.rebuilt_reason
            return {
                "path": str(self.path),
                "documents": docs,
                "embedded": embedded,
                "pending": pending,
                "sessions": sessions,
                "sources": sources,
                "by_role": by_role,
                "garbage_lines": garbage,
                "unknown_entries": unknown,
                "model": meta.get(schema.META_MODEL),
                "dimensions": meta.get(schema.META_DIMENSION),
                "size_bytes": size,
                **extra,
            }

        return self._run(op)

    # -- search ------------------------------------------------------------------

    def candidate_counts(self, k: int) -> tuple[int, int]:
        """(lexical, dense) candidates a search for ``k`` hits takes from each
        leg: pi-lcm-memory's lexMult/semMult under rrf fusion, else the main
        index's rule (DESIGN §5)."""
        if self.index_settings.fusion == "rrf":
            return max(1, self.settings.lex_mult * k), max(1, self.settings.sem_mult * k)
        n = candidate_count(k)
        return n, n

    @property
    def rrf_k(self) -> int:
        """The RRF constant fusion uses here: the sessions layer's own
        (pi-lcm-memory's rrfK) under rrf fusion, else the main index's."""
        if self.index_settings.fusion == "rrf":
            return self.settings.rrf_k
        return self.index_settings.rrf_k

    def search(
        self,
        query: str,
        vector: npt.ArrayLike | None,
        k: int,
        filters: SessionFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredDoc]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False skips the BM25 leg (mode semantic)."""
        qvec = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)
        if not lexical and qvec is None:
            raise ValueError("a semantic-only search needs a query vector")
        shared = filters.shared() if filters is not None else None
        return self._run(lambda conn: self._search(conn, query, qvec, k, shared, lexical))

    def _sync_dense(
        self, conn: sqlite3.Connection, meta: Mapping[str, Any]
    ) -> tuple[DenseMatrix | None, int | None]:
        dense, dimension = synced_matrix(conn, meta, self._dense)
        self._dense = dense
        return dense, dimension

    def _search(
        self,
        conn: sqlite3.Connection,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        k: int,
        filters: SearchFilters | None,
        use_lexical: bool,
    ) -> tuple[SearchMode, list[ScoredDoc]]:
        with self._read(conn):
            meta = self._meta(conn)
            cache_key = (meta.get(schema.META_EPOCH), meta.get(schema.META_GENERATION))
            dense = None
            if qvec is not None:
                dense, dimension = self._sync_dense(conn, meta)
                if dimension is not None and qvec.size != dimension:
                    raise DimensionMismatchError(
                        f"query vector dimension {qvec.size} does not match the session "
                        f"index dimension {dimension}",
                        hint="search with the embedder the session index was built with",
                    )
            use_dense = qvec is not None and dense is not None and len(dense) > 0
            mode: SearchMode = (
                "semantic" if not use_lexical else "hybrid" if use_dense else "lexical"
            )
            if k <= 0 or not query.strip():
                return mode, []
            n_lex, n_sem = self.candidate_counts(k)
            fused = relevance.search(
                conn,
                self._lexical,
                dense if use_dense else None,
                qvec,
                query,
                mode,
                n_lexical=n_lex,
                n_dense=n_sem,
                filters=filters,
                cache_key=cache_key,
                settings=self.index_settings,
                method=self._fuse,
                rrf_k=self.rrf_k,
            )[:k]
            if not fused:
                return mode, []
            rows = self._fetch(conn, [rowid for rowid, _ in fused])
        return mode, [ScoredDoc(rows[rowid], score) for rowid, score in fused if rowid in rows]

    def similar(self, key: str, k: int, filters: SessionFilters | None = None) -> list[ScoredDoc]:
        """Nearest neighbours of a stored document's vector, itself excluded.

        Scores are cosines clipped to [0, 1]. A document without a vector
        (tool I/O, no embedder) falls back to a lexical search on its text.
        """
        shared = filters.shared() if filters is not None else None

        def op(conn: sqlite3.Connection) -> list[ScoredDoc]:
            with self._read(conn):
                row = conn.execute(
                    "SELECT id, vector, content FROM chunks WHERE doc_key = ?", (key,)
                ).fetchone()
                if row is None or k <= 0:
                    return []
                own_id, blob, text = row
                if blob is None:
                    meta = self._meta(conn)
                    cache_key = (meta.get(schema.META_EPOCH), meta.get(schema.META_GENERATION))
                    n_lex, _ = self.candidate_counts(k + 1)
                    ranking = self._lexical.rank(conn, text, n_lex, shared, cache_key)
                    if self._fuse is None:  # the evidence fusion, lexical mode
                        evidence = relevance.gather(None, ranking, lambda rowids: {})
                        fused = relevance.evidence_ranking(evidence, "lexical")
                    else:
                        fused = relevance.rank_fusion(
                            self._fuse, None, ranking, alpha=0.0, rrf_k=self.rrf_k
                        )
                else:
                    dense, _ = self._sync_dense(conn, self._meta(conn))
                    if dense is None:
                        return []
                    query = np.frombuffer(blob, dtype=np.dtype("<f4")).astype(np.float32)
                    fused = [
                        (rowid, max(0.0, min(1.0, cos)))
                        for rowid, cos in dense.top_scored(query, k + 1, shared)
                    ]
                fused = [(rowid, s) for rowid, s in fused if rowid != own_id][:k]
                if not fused:
                    return []
                rows = self._fetch(conn, [rowid for rowid, _ in fused])
            return [ScoredDoc(rows[rowid], score) for rowid, score in fused if rowid in rows]

        return self._run(op)

    def _fetch(self, conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, StoredDoc]:
        marks = ", ".join("?" * len(rowids))
        rows = conn.execute(f"SELECT {_DOC_COLUMNS} FROM chunks WHERE id IN ({marks})", rowids)
        return {row[0]: self._doc(conn, row) for row in rows}

    def _doc(self, conn: sqlite3.Connection, row: Sequence[Any]) -> StoredDoc:
        doc = _row_doc(row)
        shown = self._shown(conn, doc.text)
        return doc if shown is doc.text else dataclasses.replace(doc, text=shown)
