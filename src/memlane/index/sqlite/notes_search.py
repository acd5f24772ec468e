"""Search over the notes index: the hybrid search (legs fused in one read
snapshot) and the chunks whose ``supersedes`` marker names an old one
(``NotesSearch``, held by ``notes.SqliteIndex``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.settings import IndexSettings
from memlane.core.supersede import HEX16, superseded_hashes
from memlane.core.types import Chunk, SearchMode
from memlane.index.legs import relevance
from memlane.index.legs.fusion import FusionMethod
from memlane.index.protocol import IndexedChunk, ScoredChunk, SearchFilters, search_mode
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.statements import cache_key_of, read, read_meta

# Each leg hands max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k) candidates to
# fusion: deep enough that a chunk ranked well by one leg only still gets
# fused. The default fusion scores a candidate whatever else the pool holds
# (legs/relevance.py), so a deeper pool only adds candidates weak in both
# legs; it was max(50, 10k), the quality sets rank as well at this depth, and
# Milvus pays for every row a leg returns (ADR 0048).
CANDIDATE_FLOOR = 20
CANDIDATE_MULTIPLIER = 2

CHUNK_COLUMNS = (
    "id, chunk_hash, source, heading, heading_level, start_line, end_line, "
    "content_hash, content, kind, date, session"
)


def candidate_count(k: int) -> int:
    return max(CANDIDATE_FLOOR, CANDIDATE_MULTIPLIER * k)


def row_to_indexed(row: Sequence[Any]) -> IndexedChunk:
    """An ``IndexedChunk`` of a row read as ``CHUNK_COLUMNS``."""
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


def _any_marker(conn: sqlite3.Connection) -> bool:
    """Some chunk carries a ``supersedes`` marker (core/supersede.py): one
    FTS lookup of the marker's word, once per index generation."""
    row = conn.execute(
        "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH 'content:supersedes' LIMIT 1"
    ).fetchone()
    return row is not None


def _fetch(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, IndexedChunk]:
    marks = ", ".join("?" * len(rowids))
    rows = conn.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", rowids)
    return {row[0]: row_to_indexed(row) for row in rows}


class NotesSearch:
    """The notes index's searches over its file.

    The fusion method and RRF constant are fixed at construction (as the
    index's settings said then); the rest of the settings are passed per search,
    since the engine may replace them (a measured cosine scale).
    """

    def __init__(self, file: SqliteFile, fuse: FusionMethod | None, rrf_k: int) -> None:
        self._file = file
        self._fuse = fuse
        self._rrf_k = rrf_k
        # (index generation, whether any chunk carries a ``supersedes``
        # marker), learned by the last search: most stores have none, and
        # then ``superseders`` needs no query.
        self._markers: tuple[object, bool] | None = None

    def search(
        self,
        settings: IndexSettings,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        k: int,
        filters: SearchFilters | None,
        use_lexical: bool,
        n: int,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        return self._file.run(
            lambda conn: self._search(conn, settings, query, qvec, k, filters, use_lexical, n)
        )

    def _search(
        self,
        conn: sqlite3.Connection,
        settings: IndexSettings,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        k: int,
        filters: SearchFilters | None,
        use_lexical: bool,
        n: int,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        # One snapshot for the whole search: the legs and the final fetch
        # see the same rows even while another process writes.
        with read(conn):
            meta = read_meta(conn)  # the one bookkeeping read per search
            cache_key = cache_key_of(meta)
            dense = self._file.query_dense(conn, meta, qvec, "index")
            if self._markers is None or self._markers[0] != cache_key:
                self._markers = (cache_key, _any_marker(conn))
            mode = search_mode(use_lexical, dense is not None)
            # An empty query matches nothing lexically; a semantic-only search
            # (memory_similar: a stored vector, no words) needs no query text.
            if k <= 0 or (use_lexical and not query.strip()):
                return mode, []
            fused = relevance.search(
                conn,
                self._file.lexical,
                dense,
                qvec,
                query,
                mode,
                n_lexical=n,
                n_dense=n,
                filters=filters,
                cache_key=cache_key,
                settings=settings,
                method=self._fuse,
                rrf_k=self._rrf_k,
            )[:k]
            if not fused:
                return mode, []
            rows = _fetch(conn, [rowid for rowid, _ in fused])
        hits = [
            ScoredChunk(chunk=rows[rowid].chunk, score=score)
            for rowid, score in fused
            if rowid in rows
        ]
        return mode, hits

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
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN "
                "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?) ORDER BY date, id",
                (match,),
            ).fetchall()
            out: dict[str, Chunk] = {}
            for row in rows:
                chunk = row_to_indexed(row).chunk
                for old in superseded_hashes(chunk.content):
                    if old in wanted:
                        out[old] = chunk
            return out

        return self._file.run(op)
