"""The lexical leg: FTS5 bm25 over exactly-tokenized, frequency-pruned terms.

Per connection it keeps two TEMP virtual tables (in memory, never in the
index file):

- ``memlane_qtok`` (+ its ``fts5vocab``): a scratch FTS5 table with the
  index's tokenizer. The query is inserted and read back as tokens, so query
  terms fold case, diacritics and punctuation exactly as the indexed text
  did; a Python re-implementation of unicode61 would drift on edge cases
  and silently lose terms.
- ``memlane_vocab``: ``fts5vocab(chunks_fts, row)``, the document frequency
  of a term, used to prune terms (see ``query.prune_terms``). A lookup walks
  the term's doclist, so frequencies are cached until the index generation
  moves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memlane.index.base import SearchFilters
from memlane.index.query import STOPWORDS, match_expression, prune_terms, query_terms
from memlane.index.schema import FTS_TOKENIZER

# Bound on the text tokenized per query; auto-context sends <= 500 chars.
MAX_QUERY_CHARS = 8000
DOC_FREQ_CACHE_MAX = 50_000  # terms; cleared wholesale when exceeded

_TEMP_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok USING fts5(q, tokenize='{FTS_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok_terms "
    "USING fts5vocab(temp, memlane_qtok, instance)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_vocab USING fts5vocab(main, chunks_fts, row)",
)


def install(conn: sqlite3.Connection) -> None:
    """Create the per-connection TEMP tables (idempotent)."""
    for ddl in _TEMP_DDL:
        conn.execute(ddl)


def tokenize(conn: sqlite3.Connection, text: str) -> list[str]:
    """``text`` as the index's tokenizer sees it, in order."""
    conn.execute("DELETE FROM temp.memlane_qtok")
    conn.execute("INSERT INTO temp.memlane_qtok(q) VALUES (?)", (text[:MAX_QUERY_CHARS],))
    rows = conn.execute("SELECT term FROM temp.memlane_qtok_terms ORDER BY offset")
    return [row[0] for row in rows]


class LexicalLeg:
    """bm25 candidates for a query; caches term statistics per generation."""

    def __init__(self) -> None:
        self._cache_key: object = None
        self._doc_freq: dict[str, int] = {}
        self._total_docs = 0
        self._stopwords: frozenset[str] | None = None

    def reset(self) -> None:
        self._cache_key = None
        self._doc_freq.clear()
        self._stopwords = None

    def stopwords(self, conn: sqlite3.Connection) -> frozenset[str]:
        """The stopwords as the index's tokenizer writes them (stemmed)."""
        if self._stopwords is None:
            self._stopwords = frozenset(tokenize(conn, " ".join(sorted(STOPWORDS))))
        return self._stopwords

    def terms(self, conn: sqlite3.Connection, text: str, cache_key: object) -> list[str]:
        """The pruned terms that will be matched (empty: nothing to search)."""
        terms = query_terms(tokenize(conn, text), self.stopwords(conn))
        if not terms:
            return []
        if cache_key != self._cache_key or len(self._doc_freq) > DOC_FREQ_CACHE_MAX:
            self._doc_freq.clear()
            self._total_docs = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
            self._cache_key = cache_key
        unknown = [t for t in terms if t not in self._doc_freq]
        if unknown:
            found = dict.fromkeys(unknown, 0)
            marks = ", ".join("?" * len(unknown))
            for term, docs in conn.execute(
                f"SELECT term, doc FROM temp.memlane_vocab WHERE term IN ({marks})", unknown
            ):
                found[term] = int(docs)
            self._doc_freq.update(found)
        return prune_terms(terms, self._doc_freq, self._total_docs)

    def rank(
        self,
        conn: sqlite3.Connection,
        text: str,
        n: int,
        filters: SearchFilters | None,
        cache_key: object,
    ) -> list[tuple[int, float]]:
        """Best-first (rowid, -bm25) by FTS5 ``rank``, ties by rowid.

        FTS5's bm25 is negative, better more so; negated, higher is better.
        """
        match = match_expression(self.terms(conn, text, cache_key))
        if match is None:
            return []
        if filters is None:
            # "ORDER BY rank, rowid" measured faster than FTS5's own
            # "ORDER BY rank" path, and it makes ties deterministic.
            sql = (
                "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
                "ORDER BY rank, rowid LIMIT ?"
            )
            params: list[object] = [match, n]
        else:
            conditions, values = filter_sql(filters)
            sql = (
                "SELECT chunks_fts.rowid, rank FROM chunks_fts JOIN chunks INDEXED BY chunks_filter "
                "ON chunks.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND "
                + " AND ".join(conditions)
                + " ORDER BY rank, chunks_fts.rowid LIMIT ?"
            )
            params = [match, *values, n]
        return [(row[0], -float(row[1])) for row in conn.execute(sql, params)]


def filter_sql(filters: SearchFilters) -> tuple[list[str], Sequence[object]]:
    """SQL conditions on ``chunks`` equal to DenseMatrix's filter mask."""
    conditions: list[str] = []
    values: list[object] = []
    if filters.kind:
        conditions.append("chunks.kind = ?")
        values.append(filters.kind)
    if filters.source_prefix:
        # substr, not LIKE: a prefix with % or _ must match literally.
        conditions.append("substr(chunks.source, 1, ?) = ?")
        values += [len(filters.source_prefix), filters.source_prefix]
    if filters.session:
        conditions.append("chunks.session = ?")
        values.append(filters.session)
    if filters.after:
        conditions.append("chunks.date >= ?")
        values.append(filters.after)
    if filters.before:
        conditions.append("chunks.date < ?")
        values.append(filters.before)
    return conditions, values
