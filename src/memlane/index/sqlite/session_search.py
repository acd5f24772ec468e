"""Search over a sessions index: the hybrid search and ``similar``, on the
shared legs (lexical, dense, fusion) with a rowid window for a session
filter; plain functions over the store's ``SqliteFile``, its ``Redaction``
and the ``Fusing`` its settings give."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.settings import IndexSettings
from memlane.core.types import SearchMode
from memlane.index.legs import lexical, relevance
from memlane.index.legs.fusion import FusionMethod
from memlane.index.protocol import SearchFilters, search_mode
from memlane.index.session_docs import ScoredDoc, StoredDoc
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.session_redaction import Redaction
from memlane.index.sqlite.session_schema import DOC_COLUMNS
from memlane.index.sqlite.statements import cache_key_of, read, read_meta


class SessionLexicalLeg(lexical.LexicalLeg):
    """The shared lexical leg, plus a rowid window for a session filter.

    A session's messages were inserted together, so its rows sit in a narrow
    rowid range; FTS5 restricts a MATCH to a rowid range inside its doclists,
    before any join. Without the window every match of a common term was
    joined and checked (33 ms at 100k documents for a session filter).
    """

    # A message's file is its session (chunks_filter and chunks_session
    # serve the check).
    file_column = "session"

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


@dataclass(frozen=True)
class Fusing:
    """How a search fuses its legs: the shared leg settings, the fusion
    method (None: evidence fusion), the RRF constant, and the candidates
    each leg hands over (``candidates(k)`` -> (lexical, dense))."""

    settings: IndexSettings
    method: FusionMethod | None
    rrf_k: int
    candidates: Callable[[int], tuple[int, int]]


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


def doc_of(redaction: Redaction, conn: sqlite3.Connection, row: Sequence[Any]) -> StoredDoc:
    """The document of a row read as ``DOC_COLUMNS``, its text as a reader may see it."""
    doc = _row_doc(row)
    shown = redaction.shown(conn, doc.text)
    return doc if shown is doc.text else dataclasses.replace(doc, text=shown)


def _fetch(
    redaction: Redaction, conn: sqlite3.Connection, rowids: Sequence[int]
) -> dict[int, StoredDoc]:
    marks = ", ".join("?" * len(rowids))
    rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM chunks WHERE id IN ({marks})", rowids)
    return {row[0]: doc_of(redaction, conn, row) for row in rows}


def search(
    file: SqliteFile,
    redaction: Redaction,
    fusing: Fusing,
    query: str,
    qvec: npt.NDArray[np.float32] | None,
    k: int,
    filters: SearchFilters | None,
    use_lexical: bool,
) -> tuple[SearchMode, list[ScoredDoc]]:
    """Hybrid search; ``qvec`` None skips the dense leg (mode lexical),
    ``use_lexical`` False skips the BM25 leg (mode semantic)."""

    def op(conn: sqlite3.Connection) -> tuple[SearchMode, list[ScoredDoc]]:
        with read(conn):
            meta = read_meta(conn)
            cache_key = cache_key_of(meta)
            dense = file.query_dense(conn, meta, qvec, "session index")
            mode = search_mode(use_lexical, dense is not None)
            if k <= 0 or not query.strip():
                return mode, []
            n_lex, n_sem = fusing.candidates(k)
            fused = relevance.search(
                conn,
                file.lexical,
                dense,
                qvec,
                query,
                mode,
                n_lexical=n_lex,
                n_dense=n_sem,
                filters=filters,
                cache_key=cache_key,
                settings=fusing.settings,
                method=fusing.method,
                rrf_k=fusing.rrf_k,
            )[:k]
            if not fused:
                return mode, []
            rows = _fetch(redaction, conn, [rowid for rowid, _ in fused])
        return mode, [ScoredDoc(rows[rowid], score) for rowid, score in fused if rowid in rows]

    return file.run(op)


def similar(
    file: SqliteFile,
    redaction: Redaction,
    fusing: Fusing,
    key: str,
    k: int,
    filters: SearchFilters | None,
) -> list[ScoredDoc]:
    """Nearest neighbours of a stored document's vector, itself excluded.

    Scores are cosines clipped to [0, 1]. A document without a vector
    (tool I/O, no embedder) falls back to a lexical search on its text.
    """

    def op(conn: sqlite3.Connection) -> list[ScoredDoc]:
        with read(conn):
            row = conn.execute(
                "SELECT id, vector, content FROM chunks WHERE doc_key = ?", (key,)
            ).fetchone()
            if row is None or k <= 0:
                return []
            own_id, blob, text = row
            if blob is None:
                cache_key = cache_key_of(read_meta(conn))
                n_lex, _ = fusing.candidates(k + 1)
                ranking = file.lexical.rank(conn, text, n_lex, filters, cache_key)
                if fusing.method is None:  # the evidence fusion, lexical mode
                    evidence = relevance.gather(None, ranking, lambda rowids: {})
                    fused = relevance.evidence_ranking(evidence, "lexical")
                else:
                    fused = relevance.rank_fusion(
                        fusing.method, None, ranking, alpha=0.0, rrf_k=fusing.rrf_k
                    )
            else:
                dense, _ = file.synced_dense(conn, read_meta(conn))
                if dense is None:
                    return []
                query = np.frombuffer(blob, dtype=np.dtype("<f4")).astype(np.float32)
                fused = [
                    (rowid, max(0.0, min(1.0, cos)))
                    for rowid, cos in dense.search(query, k + 1, filters).hits
                ]
            fused = [(rowid, s) for rowid, s in fused if rowid != own_id][:k]
            if not fused:
                return []
            rows = _fetch(redaction, conn, [rowid for rowid, _ in fused])
        return [ScoredDoc(rows[rowid], score) for rowid, score in fused if rowid in rows]

    return file.run(op)
