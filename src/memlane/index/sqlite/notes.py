"""The default index backend: one SQLite file per collection.

BM25 comes from FTS5, cosine from an in-process int8 matrix of every
stored vector, mapped from the vector file beside the index and rescored
with the stored float32 vectors (see ``legs/dense.py``); the two ranked legs are fused by
``legs/fusion.py``. Many processes (sidecars, hooks, the CLI) may open the same
file: WAL lets readers run beside one writer, every write is a short
``BEGIN IMMEDIATE`` transaction that bumps a generation counter, and each
process refreshes its matrix when it sees the counter move.

A damaged file is moved aside and replaced by an empty index, never
repaired; ``rebuilt_reason`` tells the engine to re-index from markdown.
``SqliteIndex`` holds a ``file.SqliteFile`` (open, busy retry, rebuild,
transactions; shared machinery with the sessions index) made with
``notes_file.NotesKind`` (the schema, what a rebuild means); its work is
done by ``notes_reads``, ``notes_writes`` and ``notes_search`` over it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from memlane.core.errors import ConfigError
from memlane.core.settings import IndexSettings
from memlane.core.types import Chunk, SearchMode
from memlane.index.legs import lexical as lexical_legs
from memlane.index.legs import vector_file
from memlane.index.legs.dense import DenseMatrix
from memlane.index.legs.fusion import fusion_method
from memlane.index.protocol import (
    FileRecord,
    IndexedChunk,
    QueryVector,
    ScoredChunk,
    SearchFilters,
    query_vector_of,
)
from memlane.index.sqlite import notes_file, notes_reads, notes_writes, schema
from memlane.index.sqlite.connect import CACHE_SIZE_KIB as CACHE_SIZE_KIB
from memlane.index.sqlite.connect import connection_hook as connection_hook
from memlane.index.sqlite.file import BUSY_TIMEOUT_S as BUSY_TIMEOUT_S
from memlane.index.sqlite.file import OPEN_RETRY_S as OPEN_RETRY_S
from memlane.index.sqlite.file import TOMBSTONE_KEEP_GENERATIONS as TOMBSTONE_KEEP_GENERATIONS
from memlane.index.sqlite.file import TOMBSTONE_PRUNE_EVERY as TOMBSTONE_PRUNE_EVERY
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.notes_file import NotesKind
from memlane.index.sqlite.notes_search import CANDIDATE_FLOOR as CANDIDATE_FLOOR
from memlane.index.sqlite.notes_search import CANDIDATE_MULTIPLIER as CANDIDATE_MULTIPLIER
from memlane.index.sqlite.notes_search import NotesSearch
from memlane.index.sqlite.notes_search import candidate_count as candidate_count
from memlane.index.sqlite.statements import mark_purged, read_meta

if TYPE_CHECKING:
    from memlane.index.protocol import IndexBackend, NotesIndex


@dataclass(frozen=True)
class Purge:
    """What ``SqliteIndex.purge_deleted_text`` could not do now."""

    error: str | None = None  # the purge failed (SQLite's message)
    wal_busy: bool = False  # a reader kept old pages in the WAL past the wait


class SqliteIndex:
    """IndexBackend over one SQLite file (FTS5 + numpy vectors).

    Holds the file (``file.SqliteFile`` of kind ``NotesKind``) and its
    searches (``NotesSearch``); reads and writes are the plain functions of
    ``notes_reads`` and ``notes_writes`` over that file.
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
        fuse = fusion_method(self.settings.fusion)
        if not 0.0 <= self.settings.alpha <= 1.0:
            raise ConfigError(
                f"index.alpha must lie in [0, 1], got {self.settings.alpha}",
                hint="the dense leg's weight; the lexical leg gets 1 - alpha",
            )
        self._kind = NotesKind(self._tunables)
        # rebuilt_reason (the file's) is set when this object found (or saw
        # another process replace) a damaged index; the engine re-indexes
        # from markdown and says so once.
        self._file = self._open_file(Path(path))
        self._search = NotesSearch(self._file, fuse, self.settings.rrf_k)

    def _open_file(self, path: Path) -> SqliteFile:
        return SqliteFile(path, lexical_legs.LexicalLeg(), self._kind)

    def _tunables(self) -> tuple[float, tuple[int, int]]:
        """This module's (re-exported) tuning knobs, read at call time rather
        than bound at import, so they can be changed on memlane.index.sqlite.notes."""
        busy = self._busy_timeout_override
        window = (TOMBSTONE_KEEP_GENERATIONS, TOMBSTONE_PRUNE_EVERY)
        return (BUSY_TIMEOUT_S if busy is None else busy), window

    # -- protocol: identity, the file's state -----------------------------------

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def uri(self) -> str:
        return f"sqlite://{self.path}"

    @property
    def backend(self) -> str:
        return "sqlite"

    @property
    def embeds_beside_lexical(self) -> bool:
        # Both legs run in one read snapshot after the matrix is bound; the
        # in-process model's run would compete with the lexical leg's.
        return False

    @property
    def rebuilt_reason(self) -> str | None:
        """Why the file was found damaged (or replaced); popped once by a surface."""
        return self._file.rebuilt_reason

    @rebuilt_reason.setter
    def rebuilt_reason(self, reason: str | None) -> None:
        self._file.rebuilt_reason = reason

    def pop_rebuilt_reason(self) -> str | None:
        """Return and clear ``rebuilt_reason`` (so the notice is shown once)."""
        return self._file.pop_rebuilt_reason()

    @property
    def dense_matrix(self) -> DenseMatrix | None:
        """The in-memory vector matrix this object searches (read-only view).

        None until a dense search loads it, and again after a wipe, a model
        change or a rebuild. A search while the file's write generation is
        unchanged reuses the same object; small writes patch it in place; a
        full reload gives a new one. For diagnostics (``nbytes``, the
        ``generation`` it mirrors) and tests of that cache.
        """
        return self._file.dense_matrix

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
        images. The vector file beside it goes too (it still holds the
        deleted rows' vectors; the next search writes it again). Nothing to
        do when the index file does not exist.
        """
        if not path.exists():
            vector_file.discard(path)
            return Purge()
        conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
        try:
            # Marked before the vector file goes: a process writing one from a
            # snapshot older than the deletes sees the mark and drops its file.
            try:
                mark_purged(conn)
            finally:
                vector_file.discard(path)  # marked or not, this copy goes
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

    # -- protocol: model binding, writes ------------------------------------------

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        return notes_file.ensure_model(self._file, self._kind, model, dimension)

    def clear(self) -> None:
        """Drop every chunk and file record and forget the bound model, in
        place (processes holding the file open just see the generation move)."""
        notes_file.clear(self._file, self._kind)

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[IndexedChunk],
        vectors: Mapping[str, np.ndarray],
    ) -> int:
        return notes_writes.replace_file(self._file, record, chunks, vectors)

    def remove_files(self, sources: Iterable[str]) -> int:
        return notes_writes.remove_files(self._file, sources)

    def set_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        notes_writes.set_vectors(self._file, vectors)

    # -- protocol: reads -------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        return notes_reads.files(self._file)

    def chunk_hashes(self, source: str) -> set[str]:
        return notes_reads.chunk_hashes(self._file, source)

    def chunk_contexts(self, source: str) -> dict[str, str]:
        return notes_reads.chunk_contexts(self._file, source)

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        return notes_reads.missing_vectors(self._file, limit)

    def count(self) -> int:
        return notes_reads.count(self._file)

    def prepare_search(self, *, bulk: bool = True) -> None:
        self._file.prepare_dense(load=bulk)

    def get(self, chunk_hash: str) -> Chunk | None:
        item = self.get_indexed(chunk_hash)
        return item.chunk if item is not None else None

    def get_indexed(self, chunk_hash: str) -> IndexedChunk | None:
        """The chunk with its filter metadata (kind, date, session)."""
        return notes_reads.get_indexed(self._file, chunk_hash)

    def vector_of(self, chunk_hash: str) -> np.ndarray | None:
        """The stored vector of a chunk (None: no such chunk, or not embedded)."""
        return notes_reads.vector_of(self._file, chunk_hash)

    def vectors_of(self, chunk_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those without one are left out)."""
        return notes_reads.vectors_of(self._file, chunk_hashes)

    def export(self, batch: int = 512) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
        """Every chunk with its vector (None when not embedded), ``batch`` at a
        time in row order; each batch is one short read (``memlane migrate``)."""
        return notes_reads.export(self._file, batch)

    def stats(self) -> dict[str, Any]:
        """Counts and sizes for ``memlane status``."""
        return notes_reads.stats(self._file)

    def vector_space(self) -> tuple[Any, Any]:
        """(model, dimension) of the stored vectors, from the meta table alone."""
        meta = self._file.run(read_meta)
        return meta.get(schema.META_MODEL), meta.get(schema.META_DIMENSION)

    # -- protocol: search ------------------------------------------------------------

    def search(
        self,
        query: str,
        vector: QueryVector,
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
        return self._search.search(self.settings, query, qvec, k, filters, lexical, n)

    def superseders(self, content_hashes: Sequence[str]) -> dict[str, Chunk]:
        """Old content hash -> the chunk whose ``supersedes`` marker names it
        (core/supersede.py); the newest marker's chunk when several do."""
        return self._search.superseders(content_hashes)


if TYPE_CHECKING:
    # mypy checks here that the notes index satisfies the index protocol.
    def _satisfies_protocol(index: SqliteIndex) -> IndexBackend:
        return index

    def _satisfies_notes_protocol(index: SqliteIndex) -> NotesIndex:
        return index
