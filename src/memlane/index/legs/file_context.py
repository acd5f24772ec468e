"""A query word that nearly every chunk of a file holds counts for the whole file.

A person's name in the store of their conversations, a project's name in
its own notes: such a word is rare in a large store, so BM25 gives it a high
idf, yet inside the files that hold it, it is in nearly every chunk. There
it says which *file* a chunk belongs to, not which chunk answers: among a
conversation's turns, how often and in how short a turn the name appears
("Thanks, Caroline!") outweighs the words that tell the turns apart, and a
turn that answers without naming anyone ("I went to Paris yesterday")
falls out of the candidates. (In a store holding only that conversation the
name is in most chunks, its idf is ~0, and the other words decide.)

So when a query word is in at least ``CONTEXT_SHARE`` of the chunks of a
file (of at least ``CONTEXT_MIN_CHUNKS``), it counts in *every* chunk of
that file as its idf, once, whether the chunk holds it or not; elsewhere it
counts as BM25 counts it. The file's chunks that hold another query word
become candidates with that credit; a chunk of an unrelated file holding
the other words lacks it, as it lacks the word. The other words' scores
are untouched.

Checked only for words that could be a file's context and cost little to
check: held by at least ``CHECK_SHARE`` of a full pool of candidates (such a
word dominates the pool) and in at most ``CHECK_MAX_CHUNKS`` chunks (the
check reads each holder's file). Measured on LoCoMo inside 100,000
distractors (ADR 0052). ``lexical.LexicalLeg`` applies it (SQLite, the
notes and the sessions index alike).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from memlane.index.legs.query import BM25_MIN_IDF
from memlane.index.legs.word_parts import PoolParts, word_parts

#: A word in at least this share of a file's chunks is that file's context.
CONTEXT_SHARE = 0.8
#: Files with fewer chunks have no context: one or two chunks holding a
#: word say nothing about the file.
CONTEXT_MIN_CHUNKS = 3
#: A word is checked when at least this share of a full pool holds it ...
CHECK_SHARE = 0.5
#: ... and it is in at most this many chunks.
CHECK_MAX_CHUNKS = 1_500

#: Scores equal to this many decimals are a tie (the pool's order decides).
TIE_DIGITS = 9


@dataclass(frozen=True)
class Word:
    """A query word as the lexical leg weighs it."""

    text: str
    doc_freq: int
    idf: float


def checked(words: Sequence[Word], pool_holders: Mapping[str, int], pool: int) -> list[Word]:
    """The words worth checking: in few enough chunks, with an idf above
    FTS5's floor, held by at least ``CHECK_SHARE`` of the ``pool``
    candidates (``pool_holders``: word -> how many of them hold it)."""
    return [
        word
        for word in words
        if word.doc_freq <= CHECK_MAX_CHUNKS
        and word.idf > BM25_MIN_IDF
        and pool_holders.get(word.text, 0) >= CHECK_SHARE * pool
    ]


def context_files(held: Mapping[str, int], sizes: Mapping[str, int]) -> set[str]:
    """The files (``held``: file -> how many of its chunks hold the word;
    ``sizes``: file -> its chunks) the word is the context of."""
    return {
        source
        for source, holding in held.items()
        if sizes.get(source, 0) >= CONTEXT_MIN_CHUNKS and holding >= CONTEXT_SHARE * sizes[source]
    }


def rescored(
    pool: Sequence[tuple[int, float]],
    words: Sequence[Word],
    parts: Mapping[str, Mapping[int, float]],
    file_of: Mapping[int, str],
    contexts: Mapping[str, Collection[str]],
) -> list[tuple[int, float]]:
    """The candidates (the pool, and every chunk of ``file_of`` holding a
    query word outside that word's context files), best first, each scored
    as the sum over the words of: the word's idf when the chunk's file is
    one of the word's ``contexts``, else the word's own bm25 part in the
    chunk (``parts``: word -> row id -> part). Ties keep the pool's order,
    then row ids'."""
    outside = {
        word.text: {
            rowid: part
            for rowid, part in parts.get(word.text, {}).items()
            if file_of.get(rowid) not in contexts.get(word.text, ())
        }
        for word in words
    }
    scores: dict[int, float] = {rowid: 0.0 for rowid, _ in pool}
    for held in outside.values():
        scores.update((rowid, 0.0) for rowid in held)
    for word in words:
        for rowid, part in outside[word.text].items():
            scores[rowid] += part
        in_context = contexts.get(word.text, ())
        if in_context:
            for rowid in scores:
                if file_of.get(rowid) in in_context:
                    scores[rowid] += word.idf
    place = {rowid: i for i, (rowid, _) in enumerate(pool)}
    last = len(place)
    return sorted(
        scores.items(),
        key=lambda item: (-round(item[1], TIE_DIGITS), place.get(item[0], last), item[0]),
    )


# chunks_filter (id, kind, date, session, source) covers the lookups by
# row id: the wide chunk rows (their text inline) are never read.
_HELD_BY_FILE = (
    "SELECT {column}, count(*) FROM chunks INDEXED BY chunks_filter WHERE id IN "
    "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?) GROUP BY {column}"
)


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def files_of_context(conn: sqlite3.Connection, match: str, column: str) -> frozenset[str]:
    """The files (named by ``column``) a word (its MATCH expression) is the
    context of. It depends on the index only, not on the query: the caller
    keeps it until the index changes."""
    sql = _HELD_BY_FILE.format(column=column)
    # A file holding the word in fewer chunks than that is no context.
    held = {
        source: holding
        for source, holding in conn.execute(sql, (match,))
        if holding >= CONTEXT_MIN_CHUNKS
    }
    if not held:
        return frozenset()
    sql = f"SELECT {column}, count(*) FROM chunks WHERE {column} IN ({_marks(held)}) GROUP BY {column}"
    return frozenset(context_files(held, dict(conn.execute(sql, list(held)).fetchall())))


def in_context(
    conn: sqlite3.Connection,
    pool: Sequence[tuple[int, float]],
    words: Sequence[Word],
    in_pool: PoolParts,
    contexts_of: Callable[[str], frozenset[str]],
    column: str = "source",
) -> list[tuple[int, float]] | None:
    """``pool`` (a full pool, best first) re-ranked when a query word is the
    context of some files (module docstring; ``contexts_of``: a word's
    files, ``files_of_context``), with the chunks of those files that hold
    another query word; None when no word is. ``in_pool``: each word's parts
    in the pool's candidates."""
    rows = in_pool.rows
    # Only a word in few chunks, and in enough of them to be in half the
    # pool, is checked: it walks the index for the pool's holders; the other
    # words are walked once, when a context is found.
    could = checked(words, {word.text: word.doc_freq for word in words}, len(pool))
    if not could:
        return None
    holders = {word.text: len(in_pool(word.text)) for word in could}
    found = {word.text: contexts_of(word.text) for word in checked(could, holders, len(pool))}
    contexts = {word: files for word, files in found.items() if files}
    if not contexts:
        return None
    sources = sorted(set().union(*contexts.values()))
    sql = f"SELECT id, {column} FROM chunks WHERE {column} IN ({_marks(sources)})"
    file_of: dict[int, str] = dict(conn.execute(sql, sources).fetchall())
    sql = f"SELECT id, {column} FROM chunks INDEXED BY chunks_filter WHERE id IN ({_marks(rows)})"
    file_of.update(conn.execute(sql, rows).fetchall())
    every = list(file_of)
    # A word at FTS5's idf floor (in over half the chunks) adds nothing.
    scored = [word for word in words if word.idf > BM25_MIN_IDF]
    parts = {word.text: word_parts(conn, word.text, every) for word in scored}
    return rescored(pool, scored, parts, file_of, contexts)
