"""The default index backend: one SQLite file per collection.

BM25 comes from FTS5, cosine from an in-process numpy matrix of every
stored vector (see ``dense.py``); the two ranked legs are fused by
``fusion.py``. Many processes (sidecars, hooks, the CLI) may open the same
file: WAL lets readers run beside one writer, every write is a short
``BEGIN IMMEDIATE`` transaction that bumps a generation counter, and each
process refreshes its matrix when it sees the counter move.

A damaged file is moved aside and replaced by an empty index, never
repaired; ``rebuilt_reason`` tells the engine to re-index from markdown.
The file machinery (open, busy retry, rebuild, transactions) is
``sqlite_file.SqliteFile``, shared with the sessions index.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.errors import ConfigError, IndexCorruptError
from memlane.core.settings import IndexSettings
from memlane.core.types import Chunk, SearchMode, embedding_text_of
from memlane.index import lexical, relevance, schema
from memlane.index.base import (
    DimensionMismatchError,
    FileRecord,
    IndexBusyError,
    IndexedChunk,
    ScoredChunk,
    SearchFilters,
    file_contexts,
)
from memlane.index.dense import vector_to_blob
from memlane.index.dense_sync import synced_matrix
from memlane.index.fusion import fusion_method
from memlane.index.sqlite_file import BUSY_TIMEOUT_S as BUSY_TIMEOUT_S
from memlane.index.sqlite_file import CACHE_SIZE_KIB as CACHE_SIZE_KIB
from memlane.index.sqlite_file import OPEN_RETRY_S as OPEN_RETRY_S
from memlane.index.sqlite_file import TOMBSTONE_KEEP_GENERATIONS as TOMBSTONE_KEEP_GENERATIONS
from memlane.index.sqlite_file import TOMBSTONE_PRUNE_EVERY as TOMBSTONE_PRUNE_EVERY
from memlane.index.sqlite_file import SqliteFile, _DamagedIndex
from memlane.index.sqlite_file import connection_hook as connection_hook

log = logging.getLogger(__name__)

# Each leg hands max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k) candidates to
# fusion (DESIGN §5): deep enough that a chunk ranked well by one leg only
# still gets fused.
CANDIDATE_FLOOR = 50
CANDIDATE_MULTIPLIER = 10

_CHUNK_COLUMNS = (
    "id, chunk_hash, source, heading, heading_level, start_line, end_line, "
    "content_hash, content, kind, date, session"
)


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def candidate_count(k: int) -> int:
    return max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k)


def _row_to_indexed(row: Sequence[Any]) -> IndexedChunk:
    chunk = Chunk(
        content=row[8],
        source=row[2],
        heading=row[3],
        heading_level=row[4],
        start_line=row[5],
        end_line=row[6],
        content_hash=row[7],
        chunk_hash=row[1],
    )
    return IndexedChunk(chunk=chunk, kind=row[9], date=row[10], session=row[11])


class SqliteIndex(SqliteFile):
    """IndexBackend over one SQLite file (FTS5 + numpy vectors)."""

    def __init__(
        self,
        path: Path | str,
        settings: IndexSettings | None = None,
        *,
        busy_timeout_s: float | None = None,
    ) -> None:
        """``busy_timeout_s``: how long a call waits for another process's
        write lock before ``IndexBusyError`` (default: the module's
        ``BUSY_TIMEOUT_S``, read at call time)."""
        self.settings = settings or IndexSettings()
        self._busy_timeout_override = busy_timeout_s
        self._fuse = fusion_method(self.settings.fusion)
        self._rrf_k = self.settings.rrf_k
        if not 0.0 <= self.settings.alpha <= 1.0:
            raise ConfigError(
                f"index.alpha must lie in [0, 1], got {self.settings.alpha}",
                hint="the dense leg's weight; the lexical leg gets 1 - alpha",
            )
        self._bound_model: tuple[str, int | None] | None = None
        # rebuilt_reason (SqliteFile) is set when this object found (or saw
        # another process replace) a damaged index; the engine re-indexes
        # from markdown and says so once.
        super().__init__(path, lexical.LexicalLeg())

    # -- protocol: identity ------------------------------------------------

    @property
    def uri(self) -> str:
        return f"sqlite://{self.path}"

    def clear(self) -> None:
        """Drop every chunk and file record and forget the bound model.

        Done in place, in one transaction: processes holding the file open
        just see the generation move (a deleted or renamed file would look
        like damage to them and make each one re-index).
        """

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                self._wipe(conn)
                conn.execute(
                    "DELETE FROM meta WHERE key IN (?, ?)",
                    (schema.META_MODEL, schema.META_DIMENSION),
                )

        with self._lock:
            self._bound_model = None
            self._run(op)
            self._dense = None

    @staticmethod
    def destroy(path: Path | str) -> None:
        """Empty the index at ``path`` for a rebuild from markdown.

        A healthy file is cleared in place (see ``clear``); one that cannot
        be opened is moved aside by the open itself. Nothing to do when the
        file does not exist.
        """
        target = Path(path).expanduser().absolute()
        if not target.exists():
            return
        with SqliteIndex(target) as index:
            index.clear()

    # -- opening, validation, rebuild ---------------------------------------

    def _validate_or_create(self) -> None:
        """Cheap open-time check: our tables exist and the schema is ours.

        No integrity_check (it reads every page: too slow at 100k chunks);
        damage deeper in the file surfaces as SQLITE_CORRUPT on the first
        operation that touches it and is handled there.
        """
        conn = self._connection()
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if not names:
            self._create_schema(conn)
            lexical.install(conn)
            return
        missing = schema.REQUIRED_OBJECTS - names
        if missing:
            raise _DamagedIndex(f"missing table(s)/index(es) {', '.join(sorted(missing))}")
        meta = self._meta(conn)
        version = meta.get(schema.META_SCHEMA_VERSION)
        if not isinstance(version, int) or schema.META_GENERATION not in meta:
            raise _DamagedIndex("meta table lacks schema version or generation")
        if version > schema.SCHEMA_VERSION:
            raise _DamagedIndex(
                f"index schema version {version} is newer than this memlane "
                f"({schema.SCHEMA_VERSION})"
            )
        if version < schema.SCHEMA_VERSION:
            self._upgrade(conn, version)
        lexical.install(conn)

    def _upgrade(self, conn: sqlite3.Connection, version: int) -> None:
        """An older schema (e.g. another FTS tokenizer): empty it in place.

        The index is derived data, so an upgrade is a wipe and the engine
        re-indexes from markdown; done in place like ``clear`` so other
        processes just see the generation move.
        """
        with self._write(conn):
            row = conn.execute(
                "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
            ).fetchone()
            if row is not None and row[0] == schema.SCHEMA_VERSION:
                return  # another process upgraded it a moment ago
            self._wipe(conn)
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (schema.SCHEMA_VERSION, schema.META_SCHEMA_VERSION),
            )
        self._dense = None
        self.rebuilt_reason = (
            f"index {self.path.name} had schema version {version} (now "
            f"{schema.SCHEMA_VERSION}: {schema.SCHEMA_CHANGE}); it was emptied"
        )
        log.info("%s", self.rebuilt_reason)

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        # IF NOT EXISTS + INSERT OR IGNORE: two processes creating the same
        # new file serialise on BEGIN IMMEDIATE and the second is a no-op.
        conn.execute("BEGIN IMMEDIATE")
        try:
            for ddl in schema.TABLES_DDL:
                conn.execute(ddl)
            defaults: dict[str, object] = {
                schema.META_SCHEMA_VERSION: schema.SCHEMA_VERSION,
                schema.META_GENERATION: 0,
                schema.META_EPOCH: secrets.token_hex(8),
                schema.META_TOMBSTONE_FLOOR: 0,
            }
            if self._bound_model is not None:
                defaults[schema.META_MODEL] = self._bound_model[0]
                defaults[schema.META_DIMENSION] = self._bound_model[1]
            conn.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", list(defaults.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            self._rollback(conn)
            raise

    def _record_rebuild(self, reason: str, target: Path | None) -> None:
        if target is not None:
            self.rebuilt_reason = (
                f"index {self.path.name} was damaged ({reason}); the damaged file was "
                "deleted and a fresh one created, to be rebuilt from the markdown"
            )
        else:
            self.rebuilt_reason = (
                f"index {self.path.name} was damaged ({reason}) and another process "
                "already recreated it"
            )
        log.info("%s", self.rebuilt_reason)

    def _replaced_on_disk(self, rebuilt_meanwhile: bool) -> None:
        if self.rebuilt_reason is None:
            self.rebuilt_reason = (
                f"index {self.path.name} was replaced on disk by another process "
                "(probably rebuilt after damage)"
            )
            log.info("%s", self.rebuilt_reason)

    def _busy_error(self) -> IndexBusyError:
        waited = self._busy_timeout_s()
        return IndexBusyError(
            f"index {self.path} stayed locked by another process for {waited:g} s",
            hint="another memlane is indexing; retry shortly",
        )

    def _recreate_failed(self, exc: BaseException) -> IndexCorruptError:
        return IndexCorruptError(
            f"index {self.path} is damaged and could not be recreated: {exc}",
            hint="delete the file; it is rebuilt from markdown by `memlane reindex`",
        )

    def _damaged_after_recreate(self, reason: str) -> IndexCorruptError:
        return IndexCorruptError(
            f"index {self.path} is damaged right after being recreated: {reason}"
        )

    # This module's (re-exported) tuning knobs, read at call time rather than
    # bound at import, so they can be changed on memlane.index.sqlite.
    def _busy_timeout_s(self) -> float:
        if self._busy_timeout_override is not None:
            return self._busy_timeout_override
        return BUSY_TIMEOUT_S

    def _tombstone_window(self) -> tuple[int, int]:
        return TOMBSTONE_KEEP_GENERATIONS, TOMBSTONE_PRUNE_EVERY

    @staticmethod
    def _busy_while_opening(exc: BaseException) -> bool:
        return _is_busy(exc)

    # -- protocol: model binding ---------------------------------------------

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        with self._lock:
            self._bound_model = (model, dimension)
            return self._run(lambda conn: self._ensure_model(conn, model, dimension))

    def _ensure_model(self, conn: sqlite3.Connection, model: str, dimension: int | None) -> bool:
        if self._model_matches(self._meta(conn), model, dimension) == "same":
            return False  # the common case: no write lock taken
        with self._write(conn):
            meta = self._meta(conn)  # re-read: another process may have done it
            verdict = self._model_matches(meta, model, dimension)
            wiped = verdict == "changed"
            if wiped:
                self._wipe(conn)
            elif dimension is None:
                dimension = meta.get(schema.META_DIMENSION)  # keep what vectors set
            conn.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [(schema.META_MODEL, model), (schema.META_DIMENSION, dimension)],
            )
        if wiped:
            self._dense = None
            log.info("index %s: embedding model changed to %s; cleared", self.path.name, model)
        return wiped

    @staticmethod
    def _model_matches(meta: Mapping[str, Any], model: str, dimension: int | None) -> str:
        """Return "same" (nothing to do), "update" (record it) or "changed" (wipe)."""
        stored_model = meta.get(schema.META_MODEL)
        stored_dim = meta.get(schema.META_DIMENSION)
        dim_conflict = dimension is not None and stored_dim is not None and stored_dim != dimension
        if stored_model is None:
            # A fresh index, or one written before any model was bound: only
            # vectors of another size force a wipe.
            return "changed" if dim_conflict else "update"
        if stored_model != model or dim_conflict:
            return "changed"
        if dimension is not None and stored_dim is None:
            return "update"
        return "same"

    @staticmethod
    def _wipe(conn: sqlite3.Connection) -> None:
        """Drop every chunk, file record and FTS row (inside a write txn)."""
        for ddl in schema.DATA_TABLES_DROP:
            conn.execute(ddl)
        for ddl in schema.TABLES_DDL:
            conn.execute(ddl)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = ?", (secrets.token_hex(8), schema.META_EPOCH)
        )

    # -- vectors -------------------------------------------------------------------

    @staticmethod
    def _as_vector(chunk_hash: str, vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.size == 0 or not bool(np.all(np.isfinite(array))):
            raise ValueError(f"vector for chunk {chunk_hash} is empty or not finite")
        return array

    def _blobs(
        self, conn: sqlite3.Connection, vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> dict[str, bytes]:
        """Check every vector against the bound dimension (inside a write txn).

        The first vectors stored in an index without a recorded dimension
        set it, so vector spaces can never mix within one file.
        """
        if not vectors:
            return {}
        row = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_DIMENSION,)
        ).fetchone()
        dimension = row[0] if row is not None else None
        sizes = {array.size for array in vectors.values()}
        expected = dimension if isinstance(dimension, int) else next(iter(sizes))
        if sizes != {expected}:
            wrong = sorted(sizes - {expected})
            raise DimensionMismatchError(
                f"vector dimension {wrong[0]} does not match the index dimension {expected}",
                hint="the embedder changed; call ensure_model with the new model first",
            )
        if not isinstance(dimension, int):
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (schema.META_DIMENSION, expected),
            )
        return {chunk_hash: vector_to_blob(array) for chunk_hash, array in vectors.items()}

    # -- protocol: writes ------------------------------------------------------------

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[IndexedChunk],
        vectors: Mapping[str, np.ndarray],
    ) -> int:
        wanted: dict[str, IndexedChunk] = {}
        for item in chunks:
            if item.chunk.source != record.source:
                raise ValueError(
                    f"chunk {item.chunk.chunk_hash} has source {item.chunk.source!r}, "
                    f"not {record.source!r}"
                )
            wanted.setdefault(item.chunk.chunk_hash, item)
        arrays = {h: self._as_vector(h, vectors[h]) for h in wanted if h in vectors}
        return self._run(lambda conn: self._replace_file(conn, record, wanted, arrays))

    def _replace_file(
        self,
        conn: sqlite3.Connection,
        record: FileRecord,
        wanted: Mapping[str, IndexedChunk],
        arrays: Mapping[str, npt.NDArray[np.float32]],
    ) -> int:
        with self._write(conn) as generation:
            blobs = self._blobs(conn, arrays)
            contexts = file_contexts(wanted.values())
            rows = conn.execute(
                "SELECT chunk_hash, id, vector IS NOT NULL, context FROM chunks WHERE source = ?",
                (record.source,),
            ).fetchall()
            # A chunk whose neighbour changed keeps its hash but not its BM25
            # context: it is replaced, and keeps its vector (a note is
            # embedded as it stands, so the vector does not depend on it).
            existing = {
                chunk_hash: (rowid, has_vector)
                for chunk_hash, rowid, has_vector, context in rows
                if chunk_hash in wanted and context == contexts[chunk_hash]
            }
            moved = [
                rowid
                for chunk_hash, rowid, has_vector, _ in rows
                if chunk_hash in wanted and chunk_hash not in existing and has_vector
            ]
            kept_vectors: dict[str, bytes] = {}
            for start in range(0, len(moved), 500):
                part = moved[start : start + 500]
                marks = ", ".join("?" * len(part))
                kept_vectors.update(
                    conn.execute(
                        f"SELECT chunk_hash, vector FROM chunks WHERE id IN ({marks})", part
                    ).fetchall()
                )
            stale = [(rowid,) for chunk_hash, rowid, _, _ in rows if chunk_hash not in existing]
            conn.executemany("DELETE FROM chunks WHERE id = ?", stale)
            new_rows = []
            vector_updates = []
            for chunk_hash, item in wanted.items():
                blob = blobs.get(chunk_hash) or kept_vectors.get(chunk_hash)
                if chunk_hash in existing:
                    rowid, has_vector = existing[chunk_hash]
                    if blob is not None and not has_vector:
                        vector_updates.append((blob, generation, rowid))
                    continue
                c = item.chunk
                new_rows.append(
                    (
                        chunk_hash,
                        c.source,
                        c.heading,
                        c.heading_level,
                        c.start_line,
                        c.end_line,
                        c.content_hash,
                        item.kind,
                        item.date,
                        item.session,
                        c.content,
                        contexts[chunk_hash],
                        generation if blob is not None else None,
                        blob,
                    )
                )
            # OR IGNORE: a concurrent writer may have inserted the same chunk
            # (same hash) a moment ago; idempotent, never a duplicate.
            cursor = conn.executemany(
                "INSERT OR IGNORE INTO chunks(chunk_hash, source, heading, heading_level, "
                "start_line, end_line, content_hash, kind, date, session, content, context, "
                "vec_gen, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                new_rows,
            )
            inserted = max(cursor.rowcount, 0)
            conn.executemany(
                "UPDATE chunks SET vector = ?, vec_gen = ? WHERE id = ?", vector_updates
            )
            conn.execute(
                "INSERT INTO files(source, mtime_ns, size, digest) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(source) DO UPDATE SET mtime_ns = excluded.mtime_ns, "
                "size = excluded.size, digest = excluded.digest",
                (record.source, record.mtime_ns, record.size, record.digest),
            )
        return inserted

    def remove_files(self, sources: Iterable[str]) -> int:
        targets = [(source,) for source in dict.fromkeys(sources)]
        if not targets:
            return 0

        def op(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                # rowcount counts the rows the statement deleted, not the
                # FTS/tombstone rows its trigger wrote.
                removed = conn.executemany("DELETE FROM chunks WHERE source = ?", targets)
                conn.executemany("DELETE FROM files WHERE source = ?", targets)
            return max(removed.rowcount, 0)

        return self._run(op)

    def set_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        arrays = {h: self._as_vector(h, v) for h, v in vectors.items()}
        if not arrays:
            return

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn) as generation:
                blobs = self._blobs(conn, arrays)
                conn.executemany(
                    "UPDATE chunks SET vector = ?, vec_gen = ? WHERE chunk_hash = ?",
                    [(blob, generation, h) for h, blob in blobs.items()],
                )

        self._run(op)

    # -- protocol: reads -------------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        def op(conn: sqlite3.Connection) -> dict[str, FileRecord]:
            rows = conn.execute("SELECT source, mtime_ns, size, digest FROM files").fetchall()
            return {row[0]: FileRecord(*row) for row in rows}

        return self._run(op)

    def chunk_hashes(self, source: str) -> set[str]:
        def op(conn: sqlite3.Connection) -> set[str]:
            rows = conn.execute("SELECT chunk_hash FROM chunks WHERE source = ?", (source,))
            return {row[0] for row in rows}

        return self._run(op)

    def chunk_contexts(self, source: str) -> dict[str, str]:
        def op(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(
                "SELECT chunk_hash, context FROM chunks WHERE source = ?", (source,)
            )
            return {row[0]: row[1] or "" for row in rows}

        return self._run(op)

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        def op(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            with self._read(conn):
                rows = conn.execute(
                    "SELECT chunk_hash, content FROM chunks "
                    "WHERE vec_gen IS NULL ORDER BY id LIMIT ?",
                    (-1 if limit is None else max(limit, 0),),
                ).fetchall()
                # The same input the indexer embeds: the note as it stands.
                return [(h, embedding_text_of(content)) for h, content in rows]

        return self._run(op)

    def count(self) -> int:
        return self._run(
            lambda conn: int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        )

    def get(self, chunk_hash: str) -> Chunk | None:
        item = self.get_indexed(chunk_hash)
        return item.chunk if item is not None else None

    def get_indexed(self, chunk_hash: str) -> IndexedChunk | None:
        """The chunk with its filter metadata (kind, date, session)."""

        def op(conn: sqlite3.Connection) -> IndexedChunk | None:
            row = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE chunk_hash = ?", (chunk_hash,)
            ).fetchone()
            return _row_to_indexed(row) if row is not None else None

        return self._run(op)

    def vector_of(self, chunk_hash: str) -> np.ndarray | None:
        """The stored vector of a chunk (None: no such chunk, or not embedded)."""

        def op(conn: sqlite3.Connection) -> np.ndarray | None:
            row = conn.execute(
                "SELECT vector FROM chunks WHERE chunk_hash = ?", (chunk_hash,)
            ).fetchone()
            if row is None or row[0] is None:
                return None
            return np.frombuffer(row[0], dtype=np.float32).copy()

        return self._run(op)

    def stats(self) -> dict[str, Any]:
        """Counts and sizes for ``memlane status``."""

        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            with self._read(conn):
                chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                vectors = conn.execute(
                    "SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL"
                ).fetchone()[0]
                files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
                meta = self._meta(conn)
            size = 0
            for suffix in ("", "-wal"):
                with contextlib.suppress(OSError):
                    size += self.path.with_name(self.path.name + suffix).stat().st_size
            return {
                "path": str(self.path),
                "chunks": chunks,
                "vectors": vectors,
                "files": files,
                "size_bytes": size,
                "model": meta.get(schema.META_MODEL),
                "dimension": meta.get(schema.META_DIMENSION),
                "generation": meta.get(schema.META_GENERATION),
                "schema_version": meta.get(schema.META_SCHEMA_VERSION),
            }

        return self._run(op)

    # -- protocol: search ------------------------------------------------------------------

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        filters: SearchFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False skips the BM25 leg (mode semantic)."""
        qvec = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)
        if filters is not None and filters.is_empty():
            filters = None
        if not lexical and qvec is None:
            raise ValueError("a semantic-only search needs a query vector")
        return self._run(lambda conn: self._search(conn, query, qvec, k, filters, lexical))

    def _search(
        self,
        conn: sqlite3.Connection,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        k: int,
        filters: SearchFilters | None,
        use_lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        # One snapshot for the whole search: the legs and the final fetch
        # see the same rows even while another process writes.
        with self._read(conn):
            meta = self._meta(conn)  # the one bookkeeping read per search
            cache_key = (meta.get(schema.META_EPOCH), meta.get(schema.META_GENERATION))
            dense = None
            if qvec is not None:
                dense, dimension = synced_matrix(conn, meta, self._dense)
                self._dense = dense
                if dimension is not None and qvec.size != dimension:
                    raise DimensionMismatchError(
                        f"query vector dimension {qvec.size} does not match the index "
                        f"dimension {dimension}",
                        hint="search with the embedder the index was built with",
                    )
            use_dense = qvec is not None and dense is not None and len(dense) > 0
            mode: SearchMode = (
                "semantic" if not use_lexical else "hybrid" if use_dense else "lexical"
            )
            # An empty query matches nothing lexically; a semantic-only search
            # (memory_similar: a stored vector, no words) needs no query text.
            if k <= 0 or (use_lexical and not query.strip()):
                return mode, []
            n = candidate_count(k)
            fused = relevance.search(
                conn,
                self._lexical,
                dense if use_dense else None,
                qvec,
                query,
                mode,
                n_lexical=n,
                n_dense=n,
                filters=filters,
                cache_key=cache_key,
                settings=self.settings,
                method=self._fuse,
                rrf_k=self._rrf_k,
            )[:k]
            if not fused:
                return mode, []
            rows = self._fetch(conn, [rowid for rowid, _ in fused])
        hits = [
            ScoredChunk(chunk=rows[rowid].chunk, score=score)
            for rowid, score in fused
            if rowid in rows
        ]
        return mode, hits

    @staticmethod
    def _fetch(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, IndexedChunk]:
        marks = ", ".join("?" * len(rowids))
        rows = conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", rowids)
        return {row[0]: _row_to_indexed(row) for row in rows}
