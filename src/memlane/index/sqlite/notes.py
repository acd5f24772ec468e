"""The default index backend: one SQLite file per collection.

BM25 comes from FTS5, cosine from an in-process numpy matrix of every
stored vector (see ``legs/dense.py``); the two ranked legs are fused by
``legs/fusion.py``. Many processes (sidecars, hooks, the CLI) may open the same
file: WAL lets readers run beside one writer, every write is a short
``BEGIN IMMEDIATE`` transaction that bumps a generation counter, and each
process refreshes its matrix when it sees the counter move.

A damaged file is moved aside and replaced by an empty index, never
repaired; ``rebuilt_reason`` tells the engine to re-index from markdown.
The file machinery (open, busy retry, rebuild, transactions) is
``file.SqliteFile``, shared with the sessions index.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memlane.core.errors import ConfigError
from memlane.core.settings import IndexSettings
from memlane.core.supersede import HEX16, superseded_hashes
from memlane.core.types import Chunk, SearchMode, embedding_text_of
from memlane.index.legs import lexical, relevance
from memlane.index.legs.fusion import fusion_method
from memlane.index.protocol import (
    FileRecord,
    IndexedChunk,
    ScoredChunk,
    SearchFilters,
    query_vector_of,
)
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import BUSY_TIMEOUT_S as BUSY_TIMEOUT_S
from memlane.index.sqlite.file import CACHE_SIZE_KIB as CACHE_SIZE_KIB
from memlane.index.sqlite.file import OPEN_RETRY_S as OPEN_RETRY_S
from memlane.index.sqlite.file import TOMBSTONE_KEEP_GENERATIONS as TOMBSTONE_KEEP_GENERATIONS
from memlane.index.sqlite.file import TOMBSTONE_PRUNE_EVERY as TOMBSTONE_PRUNE_EVERY
from memlane.index.sqlite.file import connection_hook as connection_hook
from memlane.index.sqlite.file import search_mode
from memlane.index.sqlite.notes_writes import NotesWriter

if TYPE_CHECKING:
    from memlane.index.protocol import IndexBackend, NotesIndex

log = logging.getLogger(__name__)

# Each leg hands max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k) candidates to
# fusion (index/legs/fusion.py): deep enough that a chunk ranked well by one leg only
# still gets fused.
CANDIDATE_FLOOR = 50
CANDIDATE_MULTIPLIER = 10

_CHUNK_COLUMNS = (
    "id, chunk_hash, source, heading, heading_level, start_line, end_line, "
    "content_hash, content, kind, date, session"
)


@dataclass(frozen=True)
class Purge:
    """What ``SqliteIndex.purge_deleted_text`` could not do now."""

    error: str | None = None  # the purge failed (SQLite's message)
    wal_busy: bool = False  # a reader kept old pages in the WAL past the wait


def candidate_count(k: int) -> int:
    return max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k)


def _any_marker(conn: sqlite3.Connection) -> bool:
    """Some chunk carries a ``supersedes`` marker (core/supersede.py): one
    FTS lookup of the marker's word, once per index generation."""
    row = conn.execute(
        "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH 'content:supersedes' LIMIT 1"
    ).fetchone()
    return row is not None


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


class SqliteIndex(NotesWriter):
    """IndexBackend over one SQLite file (FTS5 + numpy vectors).

    The file hooks and model binding are ``NotesFile``, the writes
    ``NotesWriter``; here: construction, the tuning knobs, reads and search.
    """

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
        # (index generation, whether any chunk carries a ``supersedes``
        # marker), learned by the last search: most stores have none, and
        # then ``superseders`` needs no query.
        self._markers: tuple[object, bool] | None = None
        # rebuilt_reason (SqliteFile) is set when this object found (or saw
        # another process replace) a damaged index; the engine re-indexes
        # from markdown and says so once.
        super().__init__(path, lexical.LexicalLeg())

    # -- protocol: identity ------------------------------------------------

    @property
    def uri(self) -> str:
        return f"sqlite://{self.path}"

    @property
    def backend(self) -> str:
        return "sqlite"

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

    @staticmethod
    def purge_deleted_text(path: Path, *, checkpoint_wait_s: float) -> Purge:
        """Make deleted rows' text unrecoverable from the index file and its WAL.

        Deleting rows leaves their bytes in freed pages, in FTS5 segments (a
        delete only adds a tombstone until segments merge) and in the WAL.
        A separate connection, so nothing depends on an open index object;
        those sit outside any transaction between calls. ``optimize`` merges
        the FTS5 segments (dropping deleted documents), ``VACUUM`` rewrites
        the file without freed pages (rowids are explicit primary keys, so
        they survive), and the TRUNCATE checkpoint, retried for
        ``checkpoint_wait_s``, empties the WAL that held the old page
        images. Nothing to do when the file does not exist.
        """
        if not path.exists():
            return Purge()
        conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
        try:
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            conn.execute("VACUUM")
            deadline = time.monotonic() + checkpoint_wait_s
            while True:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        except sqlite3.Error as exc:
            return Purge(error=str(exc))
        finally:
            conn.close()
        return Purge(wal_busy=bool(busy))

    # This module's (re-exported) tuning knobs, read at call time rather than
    # bound at import, so they can be changed on memlane.index.sqlite.notes.
    def _busy_timeout_s(self) -> float:
        if self._busy_timeout_override is not None:
            return self._busy_timeout_override
        return BUSY_TIMEOUT_S

    def _tombstone_window(self) -> tuple[int, int]:
        return TOMBSTONE_KEEP_GENERATIONS, TOMBSTONE_PRUNE_EVERY

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

    def vectors_of(self, chunk_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those without one are left out)."""
        if not chunk_hashes:
            return {}

        def op(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            marks = ", ".join("?" * len(chunk_hashes))
            rows = conn.execute(
                f"SELECT chunk_hash, vector FROM chunks WHERE chunk_hash IN ({marks}) "
                "AND vector IS NOT NULL",
                list(chunk_hashes),
            )
            return {h: np.frombuffer(v, dtype=np.float32).copy() for h, v in rows}

        return self._run(op)

    def superseders(self, content_hashes: Sequence[str]) -> dict[str, Chunk]:
        """Old content hash -> the chunk whose ``supersedes`` marker names it
        (core/supersede.py); the newest marker's chunk when several do."""
        wanted = sorted({h for h in content_hashes if HEX16.fullmatch(h)})
        if not wanted or (self._markers is not None and not self._markers[1]):
            return {}

        def op(conn: sqlite3.Connection) -> dict[str, Chunk]:
            # The marker's hash is one token to the FTS tokenizer: found
            # through the index, never by scanning every chunk's text.
            match = "content:(" + " OR ".join(f'"{h}"' for h in wanted) + ")"
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN "
                "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?) ORDER BY date, id",
                (match,),
            ).fetchall()
            out: dict[str, Chunk] = {}
            for row in rows:
                chunk = _row_to_indexed(row).chunk
                for old in superseded_hashes(chunk.content):
                    if old in wanted:
                        out[old] = chunk
            return out

        return self._run(op)

    def export(self, batch: int = 512) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
        """Every chunk with its vector (None when not embedded), ``batch`` at a
        time in row order; each batch is one short read (``memlane migrate``)."""
        last = 0
        while True:

            def op(
                conn: sqlite3.Connection, after: int = last
            ) -> list[tuple[int, IndexedChunk, np.ndarray | None]]:
                rows = conn.execute(
                    f"SELECT {_CHUNK_COLUMNS}, vector FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                    (after, max(batch, 1)),
                ).fetchall()
                return [
                    (
                        row[0],
                        _row_to_indexed(row),
                        None if row[-1] is None else np.frombuffer(row[-1], dtype=np.float32),
                    )
                    for row in rows
                ]

            rows = self._run(op)
            if not rows:
                return
            last = rows[-1][0]
            yield [(item, vector) for _, item, vector in rows]

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
        reach: int | None = None,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False skips the BM25 leg (mode semantic); ``reach``: see
        ``NotesIndex.search``."""
        qvec = query_vector_of(vector, lexical=lexical)
        if filters is not None and filters.is_empty():
            filters = None
        n = candidate_count(reach or k)
        return self._run(lambda conn: self._search(conn, query, qvec, k, filters, lexical, n))

    def _search(
        self,
        conn: sqlite3.Connection,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        k: int,
        filters: SearchFilters | None,
        use_lexical: bool = True,
        n: int | None = None,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        # One snapshot for the whole search: the legs and the final fetch
        # see the same rows even while another process writes.
        with self._read(conn):
            meta = self._meta(conn)  # the one bookkeeping read per search
            cache_key = (meta.get(schema.META_EPOCH), meta.get(schema.META_GENERATION))
            dense = self._query_dense(conn, meta, qvec, "index")
            if self._markers is None or self._markers[0] != cache_key:
                self._markers = (cache_key, _any_marker(conn))
            mode = search_mode(use_lexical, dense is not None)
            # An empty query matches nothing lexically; a semantic-only search
            # (memory_similar: a stored vector, no words) needs no query text.
            if k <= 0 or (use_lexical and not query.strip()):
                return mode, []
            n = n or candidate_count(k)
            fused = relevance.search(
                conn,
                self._lexical,
                dense,
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


if TYPE_CHECKING:
    # mypy checks here that the notes index satisfies the index protocol.
    def _satisfies_protocol(index: SqliteIndex) -> IndexBackend:
        return index

    def _satisfies_notes_protocol(index: SqliteIndex) -> NotesIndex:
        return index
