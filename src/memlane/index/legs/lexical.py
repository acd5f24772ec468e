"""The lexical leg: FTS5 bm25 over exactly-tokenized, frequency-pruned terms.

Per connection it keeps TEMP virtual tables (in memory, never in the index
file):

- ``memlane_qtok`` and ``memlane_qtok_raw`` (+ their ``fts5vocab``s):
  scratch FTS5 tables with the index's tokenizer and with the same tokenizer
  without porter. The query is inserted into both and read back as tokens,
  so query terms fold case, diacritics and punctuation exactly as the
  indexed text did; a Python re-implementation of unicode61 would drift on
  edge cases and silently lose terms. The stemmed form is what the index
  holds (document frequencies, stopwords); the unstemmed word is what goes
  into MATCH, because FTS5 stems a query phrase itself: a stem sent to
  MATCH is stemmed a second time ("agreed" -> "agre" -> "agr") and matches
  nothing.
- ``memlane_vocab``: ``fts5vocab(chunks_fts, row)``, the document frequency
  of a term, used to prune terms (see ``query.prune_terms``) and to weigh
  the evidence of a match (``LexicalQuery.ideal``). A lookup walks the
  term's doclist, so frequencies are cached until the index generation
  moves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from memlane.index.legs import file_context, score_bound, shared_words
from memlane.index.legs.query import (
    BM25_MIN_IDF,
    STOPWORDS,
    idf,
    match_expression,
    prune_terms,
    query_terms,
    window_floor,
)
from memlane.index.legs.word_parts import PoolParts
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite.schema import FTS_BASE_TOKENIZER, FTS_TOKENIZER

# Bound on the text tokenized per query; auto-context sends <= 500 chars.
MAX_QUERY_CHARS = 8000
DOC_FREQ_CACHE_MAX = 50_000  # terms; cleared wholesale when exceeded

#: The query tokenizer's scratch tables (``LexicalLeg.scratch``: a read-only
#: index keeps them on a private connection, sqlite/readonly.py; topic
#: surfacing tokenizes with them on its own).
QUERY_TOKENIZER_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok USING fts5(q, tokenize='{FTS_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok_terms "
    "USING fts5vocab(temp, memlane_qtok, instance)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok_raw "
    f"USING fts5(q, tokenize='{FTS_BASE_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok_raw_terms "
    "USING fts5vocab(temp, memlane_qtok_raw, instance)",
    # A full pool's candidates, tokenized to see which query words each
    # holds (``LexicalLeg.unshared``); contentless, so emptying it needs no
    # second tokenizing.
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_qtok_pool "
    f"USING fts5(q, content='', tokenize='{FTS_TOKENIZER}')",
)
_TEMP_DDL = (
    *QUERY_TOKENIZER_DDL,
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_vocab USING fts5vocab(main, chunks_fts, row)",
)


def install(conn: sqlite3.Connection) -> None:
    """Create the per-connection TEMP tables (idempotent)."""
    for ddl in _TEMP_DDL:
        conn.execute(ddl)


def _tokens(conn: sqlite3.Connection, table: str, text: str) -> dict[int, str]:
    conn.execute(f"DELETE FROM temp.{table}")
    conn.execute(f"INSERT INTO temp.{table}(q) VALUES (?)", (text[:MAX_QUERY_CHARS],))
    rows = conn.execute(f"SELECT offset, term FROM temp.{table}_terms")
    return {int(row[0]): str(row[1]) for row in rows}


def tokenize(conn: sqlite3.Connection, text: str) -> list[str]:
    """``text`` as the index's tokenizer sees it (stemmed), in order."""
    stems = _tokens(conn, "memlane_qtok", text)
    return [stems[offset] for offset in sorted(stems)]


def words(conn: sqlite3.Connection, text: str) -> list[tuple[str, str]]:
    """``(word, stem)`` for each token of ``text``, in order: the word as
    unicode61 folds it, the stem as the index holds it. Porter stems each
    unicode61 token in place, so the two token lists align by offset."""
    stems = _tokens(conn, "memlane_qtok", text)
    raw = _tokens(conn, "memlane_qtok_raw", text)
    return [(raw.get(offset, stem), stem) for offset, stem in sorted(stems.items())]


@dataclass(frozen=True)
class LexicalQuery:
    """What a query sends to FTS5 and what a perfect match would score.

    ``ideal`` is the bm25 of a document of average length holding each of
    the query's content terms once (each term then adds exactly its idf):
    a chunk's bm25 over ``ideal`` says how much of the query it covers,
    rare words counting more, on the same scale for every query. Terms the
    index does not hold count in ``ideal`` (as a term of one chunk): a
    query whose telling word is absent has weak lexical evidence, however
    well its common words match.
    """

    words: tuple[str, ...]
    ideal: float
    #: Each word's document frequency and idf, in the order of ``words``.
    doc_freqs: tuple[int, ...] = ()
    idfs: tuple[float, ...] = ()
    #: The words the budget left out of MATCH (``query.prune_terms``), each
    #: with its document frequency and idf: a file's context still scores them.
    pruned: tuple[tuple[str, int, float], ...] = ()
    #: How many of the query's words the index does not hold.
    absent: int = 0

    @property
    def match(self) -> str | None:
        return match_expression(self.words)

    @property
    def matches(self) -> int:
        """The chunks the words are in, summed (an upper bound on the matches)."""
        return sum(self.doc_freqs)

    def evidence(self, bm25: float) -> float:
        """A chunk's bm25 (positive, higher is better) as coverage in [0, 1]."""
        if self.ideal <= 0:
            return 0.0
        return min(1.0, max(0.0, bm25 / self.ideal))


NO_QUERY = LexicalQuery((), 0.0)


@dataclass(frozen=True)
class LexicalRanking:
    """Best-first ``(rowid, bm25)`` (bm25 negated: higher is better) and the query.

    Under a scope (``file_context.py``, ADR 0053) the order is the store's
    and each bm25 the scope's, so a candidate outside the scope may come
    before one inside it with a higher bm25: the order picks the pool, the
    bm25s weigh it."""

    hits: list[tuple[int, float]]
    query: LexicalQuery


class LexicalLeg:
    """bm25 candidates for a query; caches term statistics per generation."""

    #: The column a chunk's file is named by (file_context.py); an index on
    #: it serves the check.
    file_column = "source"

    def __init__(self) -> None:
        self._cache_key: object = None
        # word -> its context (file_context.py), per generation
        self._contexts: dict[str, file_context.Context] = {}
        self._doc_freq: dict[str, int] = {}
        self._total_docs = 0
        self._rowids = (0, -1)  # lowest and highest row id, per generation
        self._stopwords: frozenset[str] | None = None
        self._columns: tuple[str, ...] | None = None  # chunks_fts's, read once per file

    def reset(self) -> None:
        self._cache_key = None
        self._doc_freq.clear()
        self._contexts.clear()
        self._stopwords = None
        self._columns = None  # a file replaced on disk may be of another schema

    def stopwords(self, conn: sqlite3.Connection) -> frozenset[str]:
        """The stopwords as the index's tokenizer writes them (stemmed)."""
        if self._stopwords is None:
            stopwords = " ".join(sorted(STOPWORDS))
            self._stopwords = frozenset(tokenize(self.scratch(conn), stopwords))
        return self._stopwords

    def _frequencies(self, conn: sqlite3.Connection, stems: list[str], cache_key: object) -> None:
        if cache_key != self._cache_key or len(self._doc_freq) > DOC_FREQ_CACHE_MAX:
            self._doc_freq.clear()
            self._contexts.clear()
            total, lowest, highest = conn.execute(
                "SELECT count(*), min(id), max(id) FROM chunks"
            ).fetchone()
            self._total_docs = int(total)
            self._rowids = (int(lowest or 0), int(highest if highest is not None else -1))
            self._cache_key = cache_key
        unknown = [t for t in stems if t not in self._doc_freq]
        if unknown:
            found = dict.fromkeys(unknown, 0)
            marks = ", ".join("?" * len(unknown))
            for term, docs in conn.execute(
                f"SELECT term, doc FROM temp.memlane_vocab WHERE term IN ({marks})", unknown
            ):
                found[term] = int(docs)
            self._doc_freq.update(found)

    def prepare(self, conn: sqlite3.Connection, text: str, cache_key: object) -> LexicalQuery:
        """The words to match (one per pruned stem) and the query's ideal bm25."""
        pairs = words(self.scratch(conn), text)
        word_of: dict[str, str] = {}
        for word, stem in pairs:
            word_of.setdefault(stem, word)
        stems = query_terms([stem for _, stem in pairs], self.stopwords(conn))
        if not stems:
            return NO_QUERY
        self._frequencies(conn, stems, cache_key)
        total = self._total_docs
        # A word the index does not hold counts like the rarest word it
        # holds: as telling as a word in one chunk, never more (with FTS5's
        # idf of n = 0 one absent word would outweigh every match in a
        # small store).
        ideal = sum(idf(max(self._doc_freq[t], 1), total) for t in stems)
        kept = prune_terms(stems, self._doc_freq, total)
        freqs = tuple(self._doc_freq[t] for t in kept)
        pruned = tuple(
            (word_of[t], self._doc_freq[t], idf(self._doc_freq[t], total))
            for t in stems
            if t not in kept and self._doc_freq[t] > 0
        )
        return LexicalQuery(
            tuple(word_of[t] for t in kept),
            ideal,
            freqs,
            tuple(idf(f, total) for f in freqs),
            pruned,
            sum(1 for t in stems if self._doc_freq[t] == 0),
        )

    def rank(
        self,
        conn: sqlite3.Connection,
        text: str,
        n: int,
        filters: SearchFilters | None,
        cache_key: object,
    ) -> LexicalRanking:
        """Best-first (rowid, -bm25) by FTS5 ``rank``, ties by rowid.

        FTS5's bm25 is negative, better more so; negated, higher is better.
        """
        query = self.prepare(conn, text, cache_key)
        match = query.match
        if match is None:
            return LexicalRanking([], query)
        # Past the budget an unfiltered ranking reads the newest rows only.
        floor = window_floor(query.matches, *self._rowids)
        # Unfiltered and whole-store: the rare words may decide the pool
        # without ranking every match.
        decided = (
            top_matches(conn, query, n, self._total_docs)
            if filters is None and floor is None
            else None
        )
        hits = decided if decided is not None else _every_match(conn, match, n, filters, floor)
        if len(hits) >= n and len(query.words) > 1 and floor is None:
            # A file's context word first (file_context.py): its candidates may
            # lie outside the pool, so only where no filter has to hold them.
            # Both rules ask which candidates hold a word: one walk each.
            in_pool = PoolParts(conn, hits)
            contextual = self.in_context(conn, hits, query, in_pool) if filters is None else None
            if contextual is None:
                hits = self.unshared(conn, hits, query, in_pool)
            else:
                hits = contextual.hits[:n]
                if contextual.ideal is not None:
                    query = replace(query, ideal=contextual.ideal)
        return LexicalRanking(hits, query)

    def in_context(
        self,
        conn: sqlite3.Connection,
        hits: list[tuple[int, float]],
        query: LexicalQuery,
        in_pool: PoolParts,
    ) -> file_context.Rescored | None:
        """``hits`` (a full pool) re-ranked when a query word is in nearly
        every chunk of some files (``file_context.py``), with the query's
        ideal for the bm25s it gives; None when no word is."""
        kept = zip(query.words, query.doc_freqs, query.idfs, strict=True)
        words = [file_context.Word(*word) for word in (*kept, *query.pruned)]
        return file_context.in_context(
            conn,
            hits,
            words,
            query.absent,
            in_pool,
            lambda word: self._context(conn, word),
            self.file_column,
        )

    def _context(self, conn: sqlite3.Connection, word: str) -> file_context.Context:
        """``word``'s context (its files, its scope), kept until the index changes
        (``_frequencies`` clears the cache with the document frequencies)."""
        context = self._contexts.get(word)
        if context is None:
            match = match_expression([word]) or ""
            context = file_context.context_in(conn, match, self.file_column)
            self._contexts[word] = context
        return context

    def scratch(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """The connection holding the query tokenizer's scratch tables
        (``QUERY_TOKENIZER_DDL``): the index's own, unless a subclass keeps
        them elsewhere."""
        return conn

    def unshared(
        self,
        conn: sqlite3.Connection,
        hits: list[tuple[int, float]],
        query: LexicalQuery,
        in_pool: PoolParts,
    ) -> list[tuple[int, float]]:
        """``hits`` (a full pool) reordered when a query word is in nearly all
        of them (``shared_words.py``).

        Which candidates hold which word: the index's own doclists when the
        words are in few chunks (``INDEX_CHECK_POSTINGS``); else their text
        tokenized by the index's tokenizer in a scratch table and matched
        there (~0.3 ms for 20 candidates, however large the store). A shared
        word's own bm25 in a candidate: what a MATCH on that word alone ranks
        it (the same idf, the same weights).
        """
        needed = shared_words.SHARED_SHARE * len(hits)
        could = [
            word
            for word, docs, weight in zip(query.words, query.doc_freqs, query.idfs, strict=True)
            # A word in fewer chunks cannot be in enough candidates; one whose
            # idf is FTS5's floor has no part in any score to take away.
            if docs >= needed and weight > BM25_MIN_IDF
        ]
        if not could:
            return hits
        holders: dict[str, set[int]] = {word: set() for word in query.words}
        postings = sum(d for w, d in zip(query.words, query.doc_freqs, strict=True) if w in could)
        if postings <= INDEX_CHECK_POSTINGS:
            # One walk of each word's doclist gives both its holders and its parts.
            holders.update({word: set(in_pool(word)) for word in could})
        else:
            if self._columns is None:
                self._columns = tuple(
                    str(row[1]) for row in conn.execute("PRAGMA table_info(chunks_fts)")
                )
            holders.update(_held(conn, self.scratch(conn), self._columns, in_pool.rows, could))
        found = shared_words.shared(hits, holders)
        if not found:
            return hits
        parts = {word: in_pool(word) for word in found}
        idfs = dict(zip(query.words, query.idfs, strict=True))
        return shared_words.reordered(hits, parts, idfs)


def _every_match(
    conn: sqlite3.Connection,
    match: str,
    n: int,
    filters: SearchFilters | None,
    floor: int | None,
) -> list[tuple[int, float]]:
    """The ``n`` best of every match (from row id ``floor`` on, if given)."""
    if filters is None:
        # "ORDER BY rank, rowid" measured faster than FTS5's own
        # "ORDER BY rank" path, and it makes ties deterministic.
        window = "" if floor is None else "AND rowid >= ? "
        sql = (
            f"SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? {window}"
            "ORDER BY rank, rowid LIMIT ?"
        )
        params: list[object] = [match, n] if floor is None else [match, floor, n]
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


# The rare words' best matches, more than the pool: usually every chunk that
# can still be among the n best is in them, so the rare words are ranked once.
_RARE_BEST = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
RARE_FETCH = 4  # times the pool
# The whole query ranked on the given rows only: FTS5 walks its doclists
# but computes bm25 only for the rows kept ("+": no rowid seeks).
_RANK_KEPT = (
    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND +rowid IN ({kept}) "
    "ORDER BY rank, rowid LIMIT ?"
)
_RARE_AT_LEAST = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rank <= ?"


def top_matches(
    conn: sqlite3.Connection, query: LexicalQuery, n: int, total_docs: int
) -> list[tuple[int, float]] | None:
    """The ``n`` best matches of ``query`` (row id, bm25 negated), exactly
    as ranking every match gives them (order, ties by row id, scores), when
    its rarest words decide them (``score_bound.py``); None when they cannot
    (the caller ranks every match). ``total_docs``: the chunks in the index."""
    match = query.match
    plan = score_bound.split(query.words, query.doc_freqs, query.idfs, n, total_docs)
    if match is None or plan is None or n < 1:
        return None
    rare = match_expression(plan.rare)
    best = conn.execute(_RARE_BEST, (rare, RARE_FETCH * n)).fetchall()
    if len(best) < n:
        return None
    nth = -float(best[n - 1][1])
    if not score_bound.decides(nth, plan.bound):
        return None
    least = score_bound.least_rare_score(nth, plan.bound)
    if len(best) == RARE_FETCH * n and -float(best[-1][1]) >= least:
        # Chunks past those fetched may still count: FTS5 finds them all.
        sql = _RANK_KEPT.format(kept=_RARE_AT_LEAST)
        found = conn.execute(sql, (match, rare, -least, n))
    else:
        kept = [int(rowid) for rowid, rank in best if -float(rank) >= least]
        sql = _RANK_KEPT.format(kept=", ".join("?" * len(kept)))
        found = conn.execute(sql, (match, *kept, n))
    return [(int(rowid), -float(rank)) for rowid, rank in found]


#: Up to this many postings (the checked words' document frequencies
#: summed) the index itself says which candidates hold a word
#: (``word_parts`` over the whole pool): FTS5 walks each word's doclist
#: (about 0.07 ms per thousand postings at 10k chunks), cheaper than
#: tokenizing the pool (0.17-0.35 ms for 20 candidates) until 1,500-3,000
#: postings. Both give the same holders.
INDEX_CHECK_POSTINGS = 1_500


def _held(
    conn: sqlite3.Connection,
    scratch: sqlite3.Connection,
    columns: Sequence[str],
    rowids: list[int],
    words: Iterable[str],
) -> dict[str, set[int]]:
    """Each of ``words`` with those of the rows ``rowids`` that hold it in
    one of the indexed ``columns`` (read from ``chunks``, which they mirror)."""
    marks = ", ".join("?" * len(rowids))
    rows = conn.execute(
        f"SELECT id, {', '.join(columns)} FROM chunks WHERE id IN ({marks})", rowids
    )
    scratch.execute("INSERT INTO temp.memlane_qtok_pool(memlane_qtok_pool) VALUES ('delete-all')")
    scratch.executemany(
        "INSERT INTO temp.memlane_qtok_pool(rowid, q) VALUES (?, ?)",
        [(rowid, "\n".join(str(c) for c in texts if c)) for rowid, *texts in rows],
    )
    sql = "SELECT rowid FROM temp.memlane_qtok_pool WHERE memlane_qtok_pool MATCH ?"
    return {
        word: {int(rowid) for (rowid,) in scratch.execute(sql, (match_expression([word]),))}
        for word in words
    }


def filter_sql(filters: SearchFilters, table: str = "chunks") -> tuple[list[str], Sequence[object]]:
    """SQL conditions on *table* (``chunks``, or the Milvus ledger's ``rows``:
    the same column names) equal to DenseMatrix's filter mask."""
    conditions: list[str] = []
    values: list[object] = []
    if filters.kind:
        conditions.append(f"{table}.kind = ?")
        values.append(filters.kind)
    if filters.source_prefix:
        # substr, not LIKE: a prefix with % or _ must match literally.
        conditions.append(f"substr({table}.source, 1, ?) = ?")
        values += [len(filters.source_prefix), filters.source_prefix]
    if filters.session:
        conditions.append(f"{table}.session = ?")
        values.append(filters.session)
    if filters.after:
        conditions.append(f"{table}.date >= ?")
        values.append(filters.after)
    if filters.before:
        conditions.append(f"{table}.date < ?")
        values.append(filters.before)
    return conditions, values
