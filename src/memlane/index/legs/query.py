"""Turning free user text into an FTS5 MATCH expression that cannot fail.

User text never reaches FTS5's query grammar. It is tokenized by SQLite's
own unicode61 tokenizer (``lexical.py``), so query terms are exactly the
terms in the index; each term is then double-quoted (a quoted string is
always a valid FTS5 phrase) and the terms are OR-ed. Quotes, parentheses,
``*``, ``-``, ``:``, ``NEAR`` and ``AND/OR/NOT`` in a query are plain words
or separators, never operators.

This module holds the pure term logic; SQL lives in ``lexical.py``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping

# Kept small on purpose: only words that carry no topic. Dropping them keeps
# the OR query from matching (and bm25-scoring) most of the collection.
_STOPWORD_TEXT = """
a an and are as at be been but by can could did do does for from had has
have how i if in into is it its me my no not of on or our so than that the
their them then there these they this to was we were what when where which
who why will with would you your
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# FTS5's floor on a term's idf (fts5_aux.c): a term in over half of the
# documents still counts, a little.
BM25_MIN_IDF = 1e-6
#: FTS5's bm25 constants (fts5_aux.c): a word's part in a chunk is
#: ``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / average length))``
#: for its weighted count ``f``; it never reaches ``idf * (k1 + 1)``.
BM25_K1 = 1.2
BM25_B = 0.75


def idf(docs_with_term: int, total_docs: int) -> float:
    """FTS5's bm25 idf: log((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    ratio = (total_docs - docs_with_term + 0.5) / (docs_with_term + 0.5)
    return math.log(ratio) if ratio > 1 else BM25_MIN_IDF


# A pasted paragraph must not become a 300-term OR: past this many distinct
# terms the extra ones add latency, not recall.
MAX_QUERY_TERMS = 64

# A term in more than this fraction of all chunks has a bm25 idf of ~0 in
# FTS5 (log((N - n + 0.5) / (n + 0.5)) is clamped at 1e-6 once n > N/2): it
# cannot change the ranking, only make every chunk a candidate to score.
COMMON_TERM_FRACTION = 0.5

# bm25 costs ~1 us per matching chunk, so an OR over common terms at 100k
# chunks costs tens of ms. Terms are kept rarest first while the sum of their
# document frequencies stays within this budget (the rarest one is always
# kept). What is dropped are the lowest-idf terms; the dense leg still sees
# the whole query. Retrieval tuning may revisit the number.
LEXICAL_DOC_BUDGET = 10_000


def window_floor(matches: int, lowest_rowid: int, highest_rowid: int) -> int | None:
    """The lowest row id an unfiltered BM25 ranking reads, or None for all.

    When even the query's rarest words are in more chunks than
    ``LEXICAL_DOC_BUDGET`` (a store of a million chunks, a query of common
    words), ranking every match costs time in proportion to the store
    (110 ms at 800k messages for one word in 18 % of them). The ranking then
    reads the newest rows only, as many as hold about the budget's worth of
    matches: FTS5 seeks the row id range, so the cost stays that of the
    budget however large the store grows. Older matches keep their dense
    evidence; term statistics (idf, the ideal score) stay the whole store's.
    """
    if matches <= LEXICAL_DOC_BUDGET or highest_rowid < lowest_rowid:
        return None
    span = highest_rowid - lowest_rowid + 1
    return highest_rowid - max(1, span * LEXICAL_DOC_BUDGET // matches) + 1


def query_terms(tokens: Iterable[str], stopwords: Collection[str] = STOPWORDS) -> list[str]:
    """Distinct tokens in order with stopwords dropped, capped.

    A query made only of stopwords keeps them (``"what is it"`` still
    searches for something). ``stopwords`` must be in the tokenizer's form
    (stemmed, when the tokenizer stems).
    """
    distinct = list(dict.fromkeys(tokens))
    content = [t for t in distinct if t not in stopwords]
    return (content or distinct)[:MAX_QUERY_TERMS]


def prune_terms(
    terms: Iterable[str],
    doc_freq: Mapping[str, int],
    total_docs: int,
    *,
    budget: int | None = None,
) -> list[str]:
    """The terms worth sending to FTS5, rarest first.

    Terms that occur nowhere are dropped (they match nothing). When the rest
    fit the budget they are all kept: pruning changes results, so it only
    happens where the query would be slow. Otherwise near-universal terms go
    first (unless nothing rarer is left: then only the rarest survives), and
    the remaining terms are kept rarest first within ``budget``.
    """
    budget = LEXICAL_DOC_BUDGET if budget is None else budget
    present = sorted(
        (t for t in dict.fromkeys(terms) if doc_freq.get(t, 0) > 0),
        key=lambda t: (doc_freq[t], t),
    )
    if not present or sum(doc_freq[t] for t in present) <= budget:
        return present
    common_cut = total_docs * COMMON_TERM_FRACTION
    useful = [t for t in present if doc_freq[t] <= common_cut] or present[:1]
    kept = [useful[0]]
    spent = doc_freq[useful[0]]
    for term in useful[1:]:
        spent += doc_freq[term]
        if spent > budget:
            break
        kept.append(term)
    return kept


def match_expression(terms: Iterable[str]) -> str | None:
    """``"a" OR "b"``; None when there is no term."""
    # unicode61 tokens hold only letters, digits and private-use characters,
    # so there is no '"' to escape; doubling it keeps that true regardless.
    quoted = [f'"{term.replace(chr(34), chr(34) * 2)}"' for term in terms if term]
    return " OR ".join(quoted) if quoted else None
