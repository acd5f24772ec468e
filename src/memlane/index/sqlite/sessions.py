"""The session-document store: every message of the project's agent transcripts.

One SQLite file per project next to its markdown index
(``<index dir>/<collection>.sessions.sqlite``), so the markdown index stays
rebuildable from markdown and this one from the transcripts.

The tables deliberately reuse the main index's names and filter columns
(``chunks``, ``chunks_fts``, ``tombstones``, ``meta`` with the same keys,
the ``chunks_filter`` covering index): the lexical leg (``legs/lexical.py``), the
in-memory vector matrix and its incremental refresh (``legs/dense.py``,
``legs/dense_sync.py``) and fusion (``legs/fusion.py``) then run on this file
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
``file.py`` and ``recovery.py``): moved aside to
``<name>.corrupt-<UTC stamp>``, recreated empty, never repaired, and the
damaged copy deleted once the fresh file is open.
Every source's offset goes with it, so the next backfill or sweep reads
every transcript again from its first byte; ``rebuilt_reason`` says why
until a user-facing surface shows it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memlane.core.clock import SYSTEM_CLOCK, utc_z
from memlane.core.settings import IndexSettings, SessionsSettings
from memlane.index.legs.dense import vector_to_blob
from memlane.index.legs.fusion import fusion_method
from memlane.index.protocol import DimensionMismatchError
from memlane.index.session_docs import (
    DOC_KIND,
    BatchWrite,
    SourceState,
    StoredDoc,
    content_hash,
)
from memlane.index.sqlite import schema
from memlane.index.sqlite.session_browse import SessionBrowse
from memlane.index.sqlite.session_schema import DOC_COLUMNS, SOURCE_COLUMNS
from memlane.index.sqlite.session_search import SessionLexicalLeg

if TYPE_CHECKING:
    from memlane.index.protocol import HybridIndex
    from memlane.index.session_docs import ScoredDoc

SESSIONS_SUFFIX = ".sessions.sqlite"


def sessions_path_for(index_path: Path) -> Path:
    """``<index dir>/<collection>.sessions.sqlite`` for ``<index dir>/<collection>.sqlite``."""
    name = index_path.name
    stem = name[: -len(".sqlite")] if name.endswith(".sqlite") else name
    return index_path.with_name(stem + SESSIONS_SUFFIX)


class SessionStore(SessionBrowse):
    """FTS5 + numpy hybrid search over session documents, in one SQLite file.

    Satisfies ``memlane.index.protocol.HybridIndex`` (as the notes index
    does); the file hooks are ``SessionFile``, the redaction of stored texts
    ``SessionRedaction``, search ``SessionSearch``; here: sources, writes and
    reads."""

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
        super().__init__(path, SessionLexicalLeg())

    @property
    def uri(self) -> str:
        """Where the index lives, as the notes index names its own."""
        return f"sqlite://{self.path}"

    # -- sources -----------------------------------------------------------------

    def sources(self) -> dict[str, SourceState]:
        def op(conn: sqlite3.Connection) -> dict[str, SourceState]:
            rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources").fetchall()
            return {row[0]: SourceState(*row) for row in rows}

        return self._run(op)

    def source(self, path: str) -> SourceState | None:
        def op(conn: sqlite3.Connection) -> SourceState | None:
            row = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE path = ?", (path,)
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

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
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
                f"SELECT {DOC_COLUMNS} FROM chunks WHERE doc_key = ?", (key,)
            ).fetchone()
            return self._doc(conn, row) if row is not None else None

        return self._run(op)

    def find_entry(self, entry_id: str) -> list[StoredDoc]:
        """Documents of a transcript entry id (a message id as pi/Claude wrote it)."""

        def op(conn: sqlite3.Connection) -> list[StoredDoc]:
            rows = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM chunks WHERE entry_id = ? ORDER BY part, id",
                (entry_id,),
            ).fetchall()
            return [self._doc(conn, row) for row in rows]

        return self._run(op)

    def docs_of(self, transcript: str) -> list[StoredDoc]:
        def op(conn: sqlite3.Connection) -> list[StoredDoc]:
            rows = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM chunks WHERE transcript = ? ORDER BY id",
                (transcript,),
            ).fetchall()
            return [self._doc(conn, row) for row in rows]

        return self._run(op)

    def stats(self) -> dict[str, Any]:
        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            with self._read(conn):
                docs = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                embedded = conn.execute(
                    "SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL"
                ).fetchone()[0]
                # The partial index holds exactly these rows: counted from it,
                # not by reading every row without a vector (all of them, in
                # a lexical-only project).
                pending = conn.execute(
                    "SELECT count(*) FROM chunks INDEXED BY chunks_pending "
                    "WHERE embed = 1 AND vec_gen IS NULL"
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


if TYPE_CHECKING:
    # mypy checks here that the sessions index satisfies the index protocol.
    def _satisfies_protocol(store: SessionStore) -> HybridIndex[ScoredDoc, StoredDoc]:
        return store
