"""Ranking a full lexical pool without scoring every match.

FTS5's bm25 of a chunk is a sum with one part per query word:
``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / average length))``,
where ``f`` is the word's (column-weighted) count in the chunk. The part
grows with ``f`` but never reaches ``idf * (k1 + 1)``, whatever the chunk.
Ranking an OR of words costs about half a microsecond per matching chunk,
and most matches of a typical query hold only its commonest words (at 10k
chunks: ~5,900 matches, 3.5 ms, for 20 candidates).

So the query's rarest words are ranked first, alone (MaxScore, Turtle and
Flood 1995). Let ``nth`` be the n-th best score they give, and ``bound``
the most the other words can add to any chunk. When ``nth > bound``:

- a chunk holding none of the rare words scores at most ``bound``, below
  the n chunks the rare words already put at ``nth`` or more;
- a chunk whose rare words score below ``nth - bound`` stays below ``nth``
  too, whatever else it holds.

The chunks left (the rare words' matches scoring ``nth - bound`` or more;
at 10k chunks a median of about a hundred) are ranked on the whole query:
their scores are exactly FTS5's, and the n best of them are exactly its n
best. When the rare words cannot decide (too few matches, or
``nth <= bound``), every match is ranked as before; that costs only the
rare words' extra pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlane.index.legs.query import BM25_K1

#: The rare words ranked first hold at most this share of the query's
#: matches (their document frequencies summed): ranking them must cost far
#: less than ranking everything. Measured at 10k chunks: 0.25 decided fewer
#: queries, 0.6 made the first pass as dear as the whole.
RARE_SHARE = 0.4

#: Try only when the rarest word could score this many times what the
#: others can add. A chunk's part of a word is near its idf, not its bound
#: (a long chunk's is less): below 2 the rare words' n-th score nearly
#: never beat the bound (bench_scale's messages, 10k: 88 of 90 failed
#: below 1.3; bench_search's entries: 2 of 16 between 1.3 and 2 decided).
PROMISE = 2.0

#: Room for floating-point rounding: the scores compared were summed in
#: other orders than FTS5 sums them, and the idfs were computed here.
_SLACK_RELATIVE = 1e-6
_SLACK_ABSOLUTE = 1e-9


@dataclass(frozen=True)
class Split:
    """The query's words ranked first, and the most the others add."""

    rare: tuple[str, ...]
    bound: float


def split(
    words: Sequence[str],
    doc_freqs: Sequence[int],
    idfs: Sequence[float],
    pool: int,
    total_docs: int,
) -> Split | None:
    """The rarest words whose matches stay within ``RARE_SHARE`` of the
    query's (at most ``total_docs``: words in most chunks match the same
    ones), and the others' bound; None when no split can pay off (one word,
    a rarest word already past the share, fewer rare matches than the pool,
    or a bound the rare words are unlikely to beat: ``PROMISE``)."""
    order = sorted(range(len(words)), key=lambda i: (doc_freqs[i], words[i]))
    allowed = RARE_SHARE * min(sum(doc_freqs), total_docs)
    taken = 0
    spent = 0
    # At least one word stays out of the first pass: else there is nothing to skip.
    while taken < len(order) - 1 and spent + doc_freqs[order[taken]] <= allowed:
        spent += doc_freqs[order[taken]]
        taken += 1
    if taken == 0 or spent < pool:
        return None
    rest = order[taken:]
    bound = (BM25_K1 + 1.0) * sum(idfs[i] for i in rest)
    if (BM25_K1 + 1.0) * idfs[order[0]] < PROMISE * bound:
        return None  # the first pass would most likely be wasted
    return Split(tuple(words[i] for i in order[:taken]), bound)


def decides(nth: float, bound: float) -> bool:
    """Whether the rare words' n-th best score ``nth`` beats any chunk they
    do not hold (``bound``), with room for rounding."""
    return nth > bound * (1.0 + _SLACK_RELATIVE) + _SLACK_ABSOLUTE


def least_rare_score(nth: float, bound: float) -> float:
    """The lowest rare-word score a chunk of the n best can have."""
    return nth - bound * (1.0 + _SLACK_RELATIVE) - _SLACK_ABSOLUTE
