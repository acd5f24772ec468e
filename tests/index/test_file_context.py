"""A query word nearly every chunk of a file holds counts for the whole file,
once (index/legs/file_context.py): the pure rule, then the SQLite leg."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import make_file, src
from hypothesis import given
from hypothesis import strategies as st

from memlane.index.legs import file_context
from memlane.index.legs.file_context import Word
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
    ranked = file_context.rescored(pool, [JON, PARIS], parts, file_of, {"jon": {"jon.md"}})
    assert ranked == [(9, 6.5), (1, 4.0), (2, 4.0), (20, 2.8)]


def test_outside_its_files_a_context_word_counts_as_bm25_counts_it() -> None:
    pool = [(1, 6.0), (30, 5.0)]
    parts = {"jon": {1: 6.0, 30: 5.0}}
    file_of = {1: "jon.md", 30: "other.md"}
    ranked = file_context.rescored(pool, [JON], parts, file_of, {"jon": {"jon.md"}})
    assert ranked == [(30, 5.0), (1, 4.0)]


scores = st.floats(min_value=0.0, max_value=20.0, allow_nan=False)


@given(st.dictionaries(st.integers(0, 40), scores, min_size=1, max_size=20))
def test_without_a_context_the_pool_keeps_bm25s_scores_and_order(hits: dict[int, float]) -> None:
    pool = sorted(hits.items(), key=lambda item: (-item[1], item[0]))
    parts = {"jon": dict(pool)}
    file_of = dict.fromkeys(hits, "jon.md")
    again = file_context.rescored(pool, [JON], parts, file_of, {})
    assert [key for key, _ in again] == [key for key, _ in pool]
    assert [score for _, score in again] == pytest.approx([score for _, score in pool])


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


def fill(index: SqliteIndex, tmp_path: Path) -> None:
    for source, texts in store(tmp_path):
        record, chunks = make_file(source, texts)
        index.replace_file(record, chunks, {})


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
