"""The lexical leg's order when a query word is in nearly all its candidates.

BM25 weighs each query word by its rarity in the whole index (idf), then by
how often a candidate repeats it and how short the candidate is. A word can
be rare in the store yet held by nearly every candidate of a query: a
person's name in a store where only the conversations with that person name
them, a project's name in a store shared with other work. Among those
candidates it no longer tells one from another, but its high idf makes
*how often* and *in how short a text* each of them holds it outweigh the
words that still tell them apart: "Thanks, Caroline!" outranks the turn
about Caroline's speech at a school. (In a store holding only that
conversation the name is in every chunk, its idf is ~0 and the other words
decide.)

So when a full pool of candidates (the leg returned as many as it was asked
for: there are more matches than it holds) has a word in at least
``SHARED_SHARE`` of them, that word counts in each candidate holding it as
``LexicalQuery.ideal`` counts it: its idf, once. Its presence still counts
in full (a candidate lacking it stays that far behind); its repetitions and
the candidate's length no longer do. The other words' scores are untouched,
and so is a pool where every word is shared (there would be nothing left to
order by). Measured on LoCoMo inside 100,000 distractors (ADR 0050).

The SQLite backend's lexical leg applies it (to the notes and the sessions
index alike). The Milvus backend does not: Milvus Lite gives a word's own
BM25 in a candidate only by a search returning every row holding the word
(a filtered search is scored with the statistics of the rows it keeps),
which doubled a Lite search's time where the rule applied (ADR 0050).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

#: A word held by at least this share of a full pool no longer tells its
#: candidates apart.
SHARED_SHARE = 0.9

#: Scores equal to this many decimals are a tie (``reordered``).
TIE_DIGITS = 9


def shared(
    hits: Sequence[tuple[int, float]],
    holders: Mapping[str, Collection[int]],
) -> list[str]:
    """The words of ``holders`` (word -> the row ids holding it) that at
    least ``SHARED_SHARE`` of ``hits`` (a full pool: the caller's to know)
    hold; none for a query of one word, or when every word would be shared."""
    if len(holders) < 2 or not hits:
        return []
    keys = {key for key, _ in hits}
    needed = SHARED_SHARE * len(keys)
    found = [
        word
        for word, holding in holders.items()
        if sum(1 for key in holding if key in keys) >= needed
    ]
    return found if len(found) < len(holders) else []


def reordered(
    hits: Sequence[tuple[int, float]],
    word_scores: Mapping[str, Mapping[int, float]],
    idfs: Mapping[str, float],
) -> list[tuple[int, float]]:
    """``hits`` (row id, bm25; higher is better; best first) with each word
    of ``word_scores`` (its own bm25 part in each candidate holding it)
    counted as its idf instead, best first. Candidates the rule leaves equal
    (to ``TIE_DIGITS`` decimals: the parts were summed in another order)
    keep the order of ``hits``: two turns holding only the shared words
    stay in BM25's order, not in the order they were written."""
    scores = dict(hits)
    for word, parts in word_scores.items():
        weight = idfs[word]
        for key, part in parts.items():
            if key in scores:
                scores[key] += weight - part
    place = {key: i for i, (key, _) in enumerate(hits)}
    return sorted(scores.items(), key=lambda item: (-round(item[1], TIE_DIGITS), place[item[0]]))
