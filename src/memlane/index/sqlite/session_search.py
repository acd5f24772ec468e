"""Search over a sessions index: the hybrid search and ``similar``, on the
shared legs (lexical, dense, fusion) with a rowid window for a session
filter."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.settings import IndexSettings, SessionsSettings
from memlane.core.types import SearchMode
from memlane.index.legs import lexical, relevance
from memlane.index.legs.fusion import FusionMethod
from memlane.index.protocol import SearchFilters, query_vector_of
from memlane.index.session_docs import ScoredDoc, SessionFilters, StoredDoc, search_filters
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import search_mode
from memlane.index.sqlite.notes import candidate_count
from memlane.index.sqlite.session_redaction import SessionRedaction
from memlane.index.sqlite.session_schema import DOC_COLUMNS


class SessionLexicalLeg(lexical.LexicalLeg):
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


class SessionSearch(SessionRedaction):
    """Hybrid search and nearest neighbours over the stored documents."""

    index_settings: IndexSettings
    settings: SessionsSettings
    _fuse: FusionMethod | None

    def candidate_counts(self, k: int) -> tuple[int, int]:
        """(lexical, dense) candidates a search for ``k`` hits takes from each
        leg: pi-lcm-memory's lexMult/semMult under rrf fusion, else the main
        index's rule (index/legs/fusion.py)."""
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
        filters: SearchFilters | SessionFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredDoc]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False skips the BM25 leg (mode semantic)."""
        qvec = query_vector_of(vector, lexical=lexical)
        shared = search_filters(filters)
        return self._run(lambda conn: self._search(conn, query, qvec, k, shared, lexical))

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
            dense = self._query_dense(conn, meta, qvec, "session index")
            mode = search_mode(use_lexical, dense is not None)
            if k <= 0 or not query.strip():
                return mode, []
            n_lex, n_sem = self.candidate_counts(k)
            fused = relevance.search(
                conn,
                self._lexical,
                dense,
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

    def similar(
        self, key: str, k: int, filters: SearchFilters | SessionFilters | None = None
    ) -> list[ScoredDoc]:
        """Nearest neighbours of a stored document's vector, itself excluded.

        Scores are cosines clipped to [0, 1]. A document without a vector
        (tool I/O, no embedder) falls back to a lexical search on its text.
        """
        shared = search_filters(filters)

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
                    dense, _ = self._synced_dense(conn, self._meta(conn))
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
        rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM chunks WHERE id IN ({marks})", rowids)
        return {row[0]: self._doc(conn, row) for row in rows}

    def _doc(self, conn: sqlite3.Connection, row: Sequence[Any]) -> StoredDoc:
        doc = _row_doc(row)
        shown = self._shown(conn, doc.text)
        return doc if shown is doc.text else dataclasses.replace(doc, text=shown)
