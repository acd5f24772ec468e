"""A query word nearly every chunk of a file holds counts for the whole file,
once, and where those files hold nearly all its chunks they scope the
lexical evidence (index/legs/file_context.py): the pure rules, then the
SQLite leg."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import make_file, src
from hypothesis import given
from hypothesis import strategies as st

from memlane.index.legs import file_context
from memlane.index.legs.file_context import Context, Word
from memlane.index.legs.query import BM25_B, BM25_K1, idf
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite.notes import SqliteIndex

JON = Word("jon", 30, 4.0)
PARIS = Word("paris", 41, 3.0)


def test_a_word_in_nearly_every_chunk_of_a_file_is_its_context() -> None:
    held = {"jon.md": 30, "trips.md": 1, "tiny.md": 2}
    sizes = {"jon.md": 31, "trips.md": 40, "tiny.md": 2}
    # tiny.md: two chunks of two, but too few to say what the file is about.
    assert file_context.context_files(held, sizes) == {"jon.md"}


def test_only_a_word_dominating_the_pool_and_in_few_chunks_is_checked() -> None:
    common = Word("trip", file_context.CHECK_MAX_CHUNKS + 1, 1.0)
    floored = Word("the", 40, file_context.BM25_MIN_IDF)
    holders = {"jon": 15, "paris": 5, "trip": 20, "the": 20}
    assert file_context.checked([JON, PARIS, common, floored], holders, 20) == [JON]


def test_a_context_word_counts_its_idf_in_every_chunk_of_its_files() -> None:
    # Pool: two short turns repeating the name (parts 6.0, 5.5). Row 9 is
    # in the same file, holds only "paris"; row 20 is a trip note elsewhere.
    pool = [(1, 6.0), (2, 5.5)]
    parts = {"jon": {1: 6.0, 2: 5.5}, "paris": {9: 2.5, 20: 2.8}}
    file_of = {1: "jon.md", 2: "jon.md", 9: "jon.md", 20: "trips.md"}
    context = {"jon": Context(frozenset({"jon.md"}))}
    ranked = file_context.rescored(pool, [JON, PARIS], parts, file_of, context)
    # Not a scope (the name is all over the store): the bm25s and the ideal stand.
    assert ranked.hits == [(9, 6.5), (1, 4.0), (2, 4.0), (20, 2.8)]
    assert ranked.ideal is None


def test_outside_its_files_a_context_word_counts_as_bm25_counts_it() -> None:
    pool = [(1, 6.0), (30, 5.0)]
    parts = {"jon": {1: 6.0, 30: 5.0}}
    file_of = {1: "jon.md", 30: "other.md"}
    context = {"jon": Context(frozenset({"jon.md"}))}
    ranked = file_context.rescored(pool, [JON], parts, file_of, context)
    assert ranked.hits == [(30, 5.0), (1, 4.0)]


scores = st.floats(min_value=0.0, max_value=20.0, allow_nan=False)


@given(st.dictionaries(st.integers(0, 40), scores, min_size=1, max_size=20))
def test_without_a_context_the_pool_keeps_bm25s_scores_and_order(hits: dict[int, float]) -> None:
    pool = sorted(hits.items(), key=lambda item: (-item[1], item[0]))
    parts = {"jon": dict(pool)}
    file_of = dict.fromkeys(hits, "jon.md")
    again = file_context.rescored(pool, [JON], parts, file_of, {})
    assert [key for key, _ in again.hits] == [key for key, _ in pool]
    assert [score for _, score in again.hits] == pytest.approx([score for _, score in pool])
    assert again.ideal is None


def test_files_holding_nearly_all_of_a_words_chunks_are_its_scope() -> None:
    # A speaker's name: every chunk of their conversation, once elsewhere.
    sizes = {"jon-1.md": 30, "jon-2.md": 25, "trips.md": 40}
    named = file_context.context_of({"jon-1.md": 30, "jon-2.md": 24, "trips.md": 1}, sizes)
    assert named == Context(frozenset({"jon-1.md", "jon-2.md"}), scope=True)
    # A name in half of a small store's notes, most of them about both
    # speakers: it dominates one file, yet says little about which files.
    spread = file_context.context_of({"jon-1.md": 30, "jon-2.md": 12, "trips.md": 20}, sizes)
    assert spread == Context(frozenset({"jon-1.md"}), scope=False)
    assert file_context.context_of({"trips.md": 1}, sizes) == file_context.NO_CONTEXT


#: A scope of four chunks (rows 1-4, jon.md) in a store of 10,000.
SCOPE_FILES = {1: "jon.md", 2: "jon.md", 3: "jon.md", 4: "jon.md", 50: "trips.md"}
SCOPED = {"jon": Context(frozenset({"jon.md"}), scope=True)}


def scope_parts(
    shape: dict[int, float], held: dict[str, set[int]], idfs: dict[str, float]
) -> dict[str, dict[int, float]]:
    """Each word's bm25 part in the rows holding it: the row's length
    factor (``shape``) times the word's idf, as FTS5 computes it."""
    return {
        word: {rowid: shape[rowid] * idfs[word] for rowid in rows} for word, rows in held.items()
    }


def test_a_scope_weighs_the_other_words_among_its_own_chunks() -> None:
    # "camping" is in many chunks of the store but one of the conversation's
    # four; "go" the other way round.
    jon = Word("jon", 4, 7.0)
    go, camping = Word("go", 3, 5.0), Word("camping", 900, 2.4)
    held = {"jon": {1, 2, 3, 4}, "go": {1, 2, 3}, "camping": {4, 50}}
    shape = {1: 1.5, 2: 1.4, 3: 1.3, 4: 0.8, 50: 1.0}
    parts = scope_parts(shape, held, {"jon": 7.0, "go": 5.0, "camping": 2.4})
    pool = [(1, 15.0), (2, 14.5), (3, 13.5), (4, 12.5)]
    # The query has a fourth word, in no chunk of the store.
    ranked = file_context.rescored(pool, [jon, go, camping], parts, SCOPE_FILES, SCOPED, 1)
    in_scope = {"go": idf(3, 4), "camping": idf(1, 4)}
    assert in_scope["go"] == file_context.BM25_MIN_IDF  # in three turns of four
    # The credit for the scope's word is taken off every chunk: outside,
    # the trip note (which lacks the name) stands that much lower.
    assert ranked.hits == [
        (4, pytest.approx(0.8 * in_scope["camping"])),
        (1, pytest.approx(1.5 * in_scope["go"])),
        (2, pytest.approx(1.4 * in_scope["go"])),
        (3, pytest.approx(1.3 * in_scope["go"])),
        (50, 0.0),
    ]
    # The ideal is the scope's: its other words', the absent one as a word
    # of one of its chunks.
    assert ranked.ideal == pytest.approx(in_scope["go"] + in_scope["camping"] + idf(1, 4))


shapes = st.floats(min_value=0.2, max_value=2.2, allow_nan=False)
store_idfs = st.floats(min_value=0.5, max_value=11.0, allow_nan=False)


@given(
    st.lists(shapes, min_size=4, max_size=4),
    st.tuples(store_idfs, store_idfs),
    st.tuples(store_idfs, store_idfs),
)
def test_what_the_store_holds_beyond_the_scope_does_not_change_its_evidence(
    shape: list[float], before: tuple[float, float], after: tuple[float, float]
) -> None:
    # The same conversation in two stores whose other chunks make "go" and
    # "camping" common or rare: the scope's bm25s and the query's ideal
    # are what a store of the conversation alone would give.
    held = {"jon": {1, 2, 3, 4}, "go": {1, 2}, "camping": {3}}
    rows = dict(zip((1, 2, 3, 4), shape, strict=True))
    seen = []
    for go_idf, camping_idf in (before, after):
        idfs = {"jon": 7.0, "go": go_idf, "camping": camping_idf}
        words = [Word(word, len(held[word]), idfs[word]) for word in held]
        parts = scope_parts(rows, held, idfs)
        pool = sorted(((rowid, 7.0) for rowid in rows), key=lambda item: item[0])
        ranked = file_context.rescored(pool, words, parts, SCOPE_FILES, SCOPED, 1)
        seen.append((dict(ranked.hits), ranked.ideal))
    (hits_before, ideal_before), (hits_after, ideal_after) = seen
    assert hits_after == pytest.approx(hits_before)
    assert ideal_after == pytest.approx(ideal_before)


QUERY = "Jon Paris"
ANSWER = (
    "- Gina: so glad you asked how it went! I went to Paris yesterday for the studio "
    "opening, walked along the river for hours and came back with a dozen ideas for the "
    "new place, the light and the floors"
)


def store(tmp: Path) -> list[tuple[str, list[str]]]:
    """A conversation whose every turn names Jon, the one answering where he
    went among many that say nothing else; other people's trips among
    unrelated notes (no file is about Paris), which keep the name rare."""
    turns = [f"- Jon: thanks Jon, see you soon Jon ({i})" for i in range(30)]
    trips = [
        f"- someone from the running club visited Paris in May with their sister, trip {i}"
        for i in range(40)
    ]
    notes = [f"- build {i} passed on the arm runner once the cache was warm" for i in range(400)]
    return [
        (src(tmp, "jon.md"), [*turns, ANSWER]),
        *(
            (
                src(tmp, f"notes-{j}.md"),
                [*notes[j * 100 : (j + 1) * 100], *trips[j * 10 : (j + 1) * 10]],
            )
            for j in range(4)
        ),
    ]


def index_files(index: SqliteIndex, files: list[tuple[str, list[str]]]) -> None:
    for source, texts in files:
        record, chunks = make_file(source, texts)
        index.replace_file(record, chunks, {})


def fill(index: SqliteIndex, tmp_path: Path) -> None:
    index_files(index, store(tmp_path))


def test_the_answer_in_the_names_file_outranks_turns_holding_only_the_name(
    index: SqliteIndex, tmp_path: Path
) -> None:
    fill(index, tmp_path)
    _mode, hits = index.search(QUERY, None, 5)
    assert hits[0].chunk.content == ANSWER
    # The name still tells the conversation from other people's trips.
    assert all("Jon" in hit.chunk.content for hit in hits[1:])


def test_without_the_rule_the_answer_is_not_even_a_candidate(
    index: SqliteIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same store with no word ever checked: the short turns fill the
    # pool, and the answer (one "paris" in a long turn) is not among them.
    monkeypatch.setattr(file_context, "CHECK_SHARE", 2.0)
    fill(index, tmp_path)
    _mode, hits = index.search(QUERY, None, 5)
    assert ANSWER not in [hit.chunk.content for hit in hits]


def test_a_filtered_search_keeps_to_its_filter(index: SqliteIndex, tmp_path: Path) -> None:
    # The answer's file is outside the filter: none of its chunks comes back.
    fill(index, tmp_path)
    notes = src(tmp_path, "notes-0.md")
    _mode, hits = index.search(QUERY, None, 5, SearchFilters(source_prefix=notes))
    assert hits and all(hit.chunk.source == notes for hit in hits)


CAMPING_QUERY = "When did Jon go camping?"
CAMPING = (
    "- Jon: we went camping by the lake with my sister last weekend, slept in the car "
    "and watched the stars until two in the morning"
)


def jon_conversation(tmp_path: Path) -> tuple[str, list[str]]:
    """Jon's conversation: one long turn answers; half the short turns say
    "go" (too few to make it the file's context)."""
    turns = [f"- Jon: let us go soon, Jon ({i})" for i in range(15)]
    turns += [f"- Jon: see you soon, Jon ({i})" for i in range(15)]
    return src(tmp_path, "jon.md"), [CAMPING, *turns]


def fill_scoped(index: SqliteIndex, tmp_path: Path, *, others: bool = True) -> None:
    """Jon's conversation among other people's camping notes, which make
    "camping" common in the store and leave "go" rare (``others`` False:
    the conversation alone)."""
    gear = [f"- packed the camping stove, the tent and the lamp for trip {i}" for i in range(300)]
    builds = [f"- build {i} passed on the arm runner once the cache was warm" for i in range(300)]
    files = [jon_conversation(tmp_path)]
    if others:
        files += [(src(tmp_path, f"gear-{j}.md"), gear[j * 50 : (j + 1) * 50]) for j in range(6)]
        files += [
            (src(tmp_path, f"builds-{j}.md"), builds[j * 50 : (j + 1) * 50]) for j in range(6)
        ]
    index_files(index, files)


def test_in_the_scope_of_a_name_its_own_statistics_decide(
    index: SqliteIndex, tmp_path: Path
) -> None:
    fill_scoped(index, tmp_path)
    _mode, hits = index.search(CAMPING_QUERY, None, 5)
    assert hits[0].chunk.content == CAMPING


def test_without_a_scope_the_stores_statistics_bury_the_answer(
    index: SqliteIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same store, the name's files never a scope: "go", rare in the
    # store, outweighs "camping" in every short turn.
    monkeypatch.setattr(file_context, "SCOPE_SHARE", 2.0)
    fill_scoped(index, tmp_path)
    _mode, hits = index.search(CAMPING_QUERY, None, 5)
    assert CAMPING not in [hit.chunk.content for hit in hits]


def bm25_part(count: float, word_idf: float, length: int, average: float) -> float:
    """FTS5's bm25 part of a word held ``count`` times (weighted) in a chunk."""
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
    return word_idf * count * (BM25_K1 + 1) / (count + norm)


@given(
    st.floats(min_value=0.3, max_value=12.0),
    st.integers(min_value=1, max_value=400),
    st.tuples(st.floats(min_value=3.0, max_value=300.0), st.floats(min_value=3.0, max_value=300.0)),
    st.tuples(st.floats(min_value=0.2, max_value=11.0), st.floats(min_value=0.2, max_value=11.0)),
)
def test_a_part_in_the_scope_is_the_same_count_on_the_scopes_statistics(
    count: float, length: int, averages: tuple[float, float], idfs: tuple[float, float]
) -> None:
    store_average, scope_average = averages
    store_idf, scope_idf = idfs
    part = bm25_part(count, store_idf, length, store_average)
    moved = file_context.in_scope_part(part, store_idf, scope_idf, length, averages)
    assert moved == pytest.approx(bm25_part(count, scope_idf, length, scope_average), rel=1e-6)


def test_a_scope_is_ranked_as_a_store_of_its_files_alone(tmp_path: Path) -> None:
    # Jon's conversation inside other people's notes ranks and scores as a
    # store holding only the conversation does: the same hits, the same
    # scores, the same calibrated relevance.
    seen = []
    for others in (False, True):
        index = SqliteIndex(tmp_path / f"{others}" / "ms_test_0000abcd.sqlite")
        index.ensure_model("test-model", 16)
        try:
            fill_scoped(index, tmp_path, others=others)
            _mode, hits = index.search(CAMPING_QUERY, None, 8)
            seen.append([(hit.chunk.content, hit.score) for hit in hits])
        finally:
            index.close()
    alone, inside = seen
    assert [content for content, _ in inside] == [content for content, _ in alone]
    assert [score for _, score in inside] == pytest.approx([score for _, score in alone], abs=1e-6)
