"""A query word's own bm25 in given chunks: what FTS5 ranks them for a MATCH
on that word alone (the same idf, the same column weights). The pool's rules
(``file_context.py``, ``shared_words.py``) ask it of the same words."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

from memlane.index.legs.query import match_expression


class PoolParts:
    """Each word's own bm25 in the candidates of one ranking's pool that hold
    it (``word_parts``), walked from the index once per word: the pool's
    rules (file_context.py, shared_words.py) ask for the same words."""

    def __init__(self, conn: sqlite3.Connection, hits: Sequence[tuple[int, float]]) -> None:
        self._conn = conn
        self.rows = [rowid for rowid, _ in hits]
        self._parts: dict[str, dict[int, float]] = {}

    def __call__(self, word: str) -> dict[int, float]:
        if word not in self._parts:
            self._parts[word] = word_parts(self._conn, word, self.rows)
        return self._parts[word]


def word_parts(conn: sqlite3.Connection, word: str, rows: Collection[int]) -> dict[int, float]:
    """Row id -> ``word``'s own bm25 in each of the ``rows`` that hold it. The
    ``+`` keeps the row ids out of FTS5's hands: given them, it would seek
    each and count the word's documents for its idf anew each time; this
    way it walks the word's doclist once and ranks only the holders."""
    rowids = sorted(rows)
    marks = ", ".join("?" * len(rowids))
    sql = f"SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND +rowid IN ({marks})"
    found = conn.execute(sql, (match_expression([word]), *rowids))
    return {int(rowid): -float(rank) for rowid, rank in found}
