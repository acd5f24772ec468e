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

**Scope** (ADR 0053). When a word's context files also hold nearly all the
chunks that hold it (``SCOPE_SHARE``), as a speaker's name and the files of
their conversation do, the word says which files the query is about: the
lexical evidence is then what a store of those files alone would give. In
a chunk of the scope each other word's part is the same count of the word
at its idf among the scope's chunks and at their average length (the
store's statistics count the rest of the store: a word common in a hundred
thousand other messages and rare in this conversation would tell its turns
apart no more than a filler word). The fusion sees every candidate's bm25
less the scope words' idf (the credit says which files, not which chunk: a
chunk outside the scope stands that much lower, as it lacks the word),
against the scope's ideal. Which chunks are candidates, and their order,
stay as above. A word held all over the store (a name in half of a small
store's notes, most of them about both speakers) dominates some files but
has no scope.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from memlane.index.legs import chunk_lengths
from memlane.index.legs.query import BM25_B, BM25_K1, BM25_MIN_IDF, idf
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
#: A context word whose files hold at least this share of the chunks that
#: hold it scopes the lexical evidence to those files (ADR 0053).
SCOPE_SHARE = 0.8

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


@dataclass(frozen=True)
class Context:
    """The files a word is the context of, and whether they are its scope
    (they hold at least ``SCOPE_SHARE`` of the chunks holding it). Read
    from the index with them (``context_in``) and kept as long as they are:
    every chunk of those files (row id -> file) and, for a scope, each
    one's length in tokens."""

    files: frozenset[str]
    scope: bool = False
    chunks: Mapping[int, str] = field(default_factory=dict, compare=False)
    lengths: Mapping[int, int] = field(default_factory=dict, compare=False)


NO_CONTEXT = Context(frozenset())


def context_of(held: Mapping[str, int], sizes: Mapping[str, int]) -> Context:
    """A word's context (``held``: each file holding it -> how many of its
    chunks do; ``sizes``: file -> its chunks, for those files at least)."""
    files = frozenset(context_files(held, sizes))
    if not files:
        return NO_CONTEXT
    inside = sum(held[source] for source in files)
    return Context(files, inside >= SCOPE_SHARE * sum(held.values()))


@dataclass(frozen=True)
class Lengths:
    """Chunk lengths in tokens as bm25 counts them (``chunk_lengths.py``):
    row id -> length, and the store's average."""

    of: Mapping[int, int]
    average: float


def in_scope_part(
    part: float, store_idf: float, scope_idf: float, length: int, averages: tuple[float, float]
) -> float:
    """A word's bm25 part in a chunk as the store gives it (``store_idf``,
    the store's average length) turned into the part a store of the scope
    alone would give (``scope_idf``, the scope's average length: the second
    of ``averages``): the same count of the word in the same chunk."""
    store_average, scope_average = averages
    # part = idf * f * (k1 + 1) / (f + k1 * norm): solve for the count f.
    share = min(part / store_idf, (BM25_K1 + 1.0) * (1.0 - 1e-12))
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / store_average)
    count = share * norm / (BM25_K1 + 1.0 - share)
    scope_norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / scope_average)
    return scope_idf * count * (BM25_K1 + 1.0) / (count + scope_norm)


@dataclass(frozen=True)
class Rescored:
    """The candidates best first, each with the bm25 the fusion weighs, and
    the query's ideal bm25 on that scale (``LexicalQuery.ideal``; None: the
    query's own, on the store's statistics)."""

    hits: list[tuple[int, float]]
    ideal: float | None = None


def rescored(
    pool: Sequence[tuple[int, float]],
    words: Sequence[Word],
    parts: Mapping[str, Mapping[int, float]],
    file_of: Mapping[int, str],
    contexts: Mapping[str, Context],
    absent: int = 0,
    lengths: Lengths | None = None,
) -> Rescored:
    """The candidates (the pool, and every chunk of ``file_of`` holding a
    query word outside that word's context files), best first, each ranked
    by the sum over the words of: the word's idf when the chunk's file is
    one of the word's ``contexts``, else the word's own bm25 part in the
    chunk (``parts``: word -> row id -> part); in a chunk of the scope, that
    part as a store of the scope alone would give it (module docstring:
    the word's idf among the scope's chunks, their average length from
    ``lengths``; without them, the store's).
    Ties keep the pool's order, then row ids'. ``file_of`` holds every
    chunk of every context file. A query without a scope keeps its bm25s
    and its ideal; with one, its ideal is the scope's, where its ``absent``
    words (in no chunk) count as words of one chunk, as they do in the
    store's (``LexicalLeg.prepare``)."""
    files = {word: context.files for word, context in contexts.items() if context.files}
    scope_words = [w for w in words if contexts.get(w.text, NO_CONTEXT).scope]
    scope_files = set().union(*(files[w.text] for w in scope_words))
    in_scope = {rowid for rowid, source in file_of.items() if source in scope_files}
    # Each word's idf among the scope's chunks; a word none of them holds
    # counts as a word of one, as an absent word does in the store.
    scope_idf: dict[str, float] = {}
    if scope_words:
        for w in words:
            if w.text not in files:
                held = sum(1 for rowid in parts.get(w.text, {}) if rowid in in_scope)
                scope_idf[w.text] = idf(max(1, held), len(in_scope))
    averages = _averages(lengths, in_scope)

    def part_in(word: Word, rowid: int, part: float) -> float:
        if rowid not in in_scope or word.text not in scope_idf:
            return part
        length = lengths.of.get(rowid) if lengths is not None else None
        if length is None or averages is None:
            return part * scope_idf[word.text] / word.idf
        return in_scope_part(part, word.idf, scope_idf[word.text], length, averages)

    outside = {
        word.text: {
            rowid: part_in(word, rowid, part)
            for rowid, part in parts.get(word.text, {}).items()
            if file_of.get(rowid) not in files.get(word.text, ())
        }
        for word in words
    }
    scores: dict[int, float] = {rowid: 0.0 for rowid, _ in pool}
    for held_by in outside.values():
        scores.update((rowid, 0.0) for rowid in held_by)
    for word in words:
        for rowid, part in outside[word.text].items():
            scores[rowid] += part
        if word.text in files:
            for rowid in scores:
                if file_of.get(rowid) in files[word.text]:
                    scores[rowid] += word.idf
    place = {rowid: i for i, (rowid, _) in enumerate(pool)}
    last = len(place)
    ranked = sorted(
        scores.items(),
        key=lambda item: (-round(item[1], TIE_DIGITS), place.get(item[0], last), item[0]),
    )
    if not scope_words:
        return Rescored(ranked)
    credit = sum(w.idf for w in scope_words)
    ideal = absent * idf(1, len(in_scope)) + sum(
        scope_idf.get(w.text, w.idf) for w in words if w not in scope_words
    )
    return Rescored([(rowid, max(0.0, score - credit)) for rowid, score in ranked], ideal)


def _averages(lengths: Lengths | None, in_scope: Collection[int]) -> tuple[float, float] | None:
    """The store's and the scope's average chunk length, when both are known."""
    if lengths is None or lengths.average <= 0:
        return None
    known = [lengths.of[rowid] for rowid in in_scope if rowid in lengths.of]
    if not known or sum(known) <= 0:
        return None
    return lengths.average, sum(known) / len(known)


# chunks_filter (id, kind, date, session, source) covers the lookups by
# row id: the wide chunk rows (their text inline) are never read.
_HELD_BY_FILE = (
    "SELECT {column}, count(*) FROM chunks INDEXED BY chunks_filter WHERE id IN "
    "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?) GROUP BY {column}"
)


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def context_in(conn: sqlite3.Connection, match: str, column: str) -> Context:
    """The context of a word (its MATCH expression): the files, named by
    ``column``, it is the context of, and whether they are its scope. It
    depends on the index only, not on the query: the caller keeps it until
    the index changes."""
    held = dict(conn.execute(_HELD_BY_FILE.format(column=column), (match,)).fetchall())
    # A file holding the word in fewer chunks than that is no context.
    could = [source for source, holding in held.items() if holding >= CONTEXT_MIN_CHUNKS]
    if not could:
        return NO_CONTEXT
    sql = f"SELECT {column}, count(*) FROM chunks WHERE {column} IN ({_marks(could)}) GROUP BY {column}"
    context = context_of(held, dict(conn.execute(sql, could).fetchall()))
    if not context.files:
        return context
    files = sorted(context.files)
    sql = f"SELECT id, {column} FROM chunks WHERE {column} IN ({_marks(files)})"
    chunks: dict[int, str] = dict(conn.execute(sql, files).fetchall())
    lengths = chunk_lengths.lengths(conn, chunks) if context.scope else {}
    return replace(context, chunks=chunks, lengths=lengths)


def in_context(
    conn: sqlite3.Connection,
    pool: Sequence[tuple[int, float]],
    words: Sequence[Word],
    absent: int,
    in_pool: PoolParts,
    contexts_of: Callable[[str], Context],
    column: str = "source",
) -> Rescored | None:
    """``pool`` (a full pool, best first) re-ranked when a query word is the
    context of some files (module docstring; ``contexts_of``: a word's
    context, ``context_in``), with the chunks of those files that hold
    another query word; None when no word is. ``absent``: how many of the
    query's words no chunk holds; ``in_pool``: each word's parts in the
    pool's candidates."""
    rows = in_pool.rows
    # Only a word in few chunks, and in enough of them to be in half the
    # pool, is checked: it walks the index for the pool's holders; the other
    # words are walked once, when a context is found.
    could = checked(words, {word.text: word.doc_freq for word in words}, len(pool))
    if not could:
        return None
    holders = {word.text: len(in_pool(word.text)) for word in could}
    found = {word.text: contexts_of(word.text) for word in checked(could, holders, len(pool))}
    contexts = {word: context for word, context in found.items() if context.files}
    if not contexts:
        return None
    file_of: dict[int, str] = {}
    scope_lengths: dict[int, int] = {}
    for context in contexts.values():
        file_of.update(context.chunks)
        scope_lengths.update(context.lengths)
    sql = f"SELECT id, {column} FROM chunks INDEXED BY chunks_filter WHERE id IN ({_marks(rows)})"
    file_of.update(conn.execute(sql, rows).fetchall())
    every = list(file_of)
    # A word at FTS5's idf floor (in over half the chunks) adds nothing.
    scored = [word for word in words if word.idf > BM25_MIN_IDF]
    parts = {word.text: word_parts(conn, word.text, every) for word in scored}
    lengths = None
    if any(context.scope for context in contexts.values()):
        lengths = Lengths(scope_lengths, chunk_lengths.average_length(conn))
    return rescored(pool, scored, parts, file_of, contexts, absent, lengths)
