"""A query word in nearly every lexical candidate counts once, as its idf
(index/legs/shared_words.py): the pure rule, then the SQLite leg."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import NAMED_QUERY, NAMED_TURN, make_file, named_corpus
from hypothesis import given
from hypothesis import strategies as st

from memlane.core.settings import IndexSettings
from memlane.index.legs import file_context, lexical, shared_words
from memlane.index.sqlite.notes import SqliteIndex
from memlane.index.sqlite.readonly import open_read_only

POOL = [(1, 9.0), (2, 8.0), (3, 7.0), (4, 6.0), (5, 5.0), (6, 4.0), (7, 3.0), (8, 2.0), (9, 1.0)]
EVERYWHERE = {key for key, _ in POOL}


def test_a_word_every_candidate_holds_is_shared() -> None:
    holders = {"caroline": EVERYWHERE, "speech": {9}}
    assert shared_words.shared(POOL, holders) == ["caroline"]


def test_a_word_most_but_not_nearly_all_candidates_hold_still_counts() -> None:
    holders = {"caroline": EVERYWHERE - {1, 2}, "speech": {9}}  # 7 of 9
    assert shared_words.shared(POOL, holders) == []


def test_when_every_word_is_shared_none_is() -> None:
    holders = {"caroline": EVERYWHERE, "speech": EVERYWHERE}
    assert shared_words.shared(POOL, holders) == []
    assert shared_words.shared(POOL, {"caroline": EVERYWHERE}) == []


def test_a_shared_word_counts_its_idf_once_in_each_holder() -> None:
    # Candidate 1 repeats the name in a short text (its part 8.5 of 9.0);
    # candidate 9 holds it once in a long one (0.5) and the other word (1.0).
    hits = [(1, 9.0), (9, 1.5)]
    parts = {"caroline": {1: 8.5, 9: 0.5}}
    assert shared_words.reordered(hits, parts, {"caroline": 2.0}) == [(9, 3.0), (1, 2.5)]


def test_candidates_the_rule_leaves_equal_keep_bm25s_order() -> None:
    # Both hold only the shared word: once it counts as its idf they tie,
    # and the one BM25 put first (row 9: it repeats the word) stays first.
    hits = [(9, 5.0), (1, 4.0), (4, 3.5)]
    parts = {"caroline": {9: 5.0, 1: 4.0, 4: 2.0}}
    again = shared_words.reordered(hits, parts, {"caroline": 2.0})
    assert again == [(4, 3.5), (9, 2.0), (1, 2.0)]


scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)


@given(st.dictionaries(st.integers(0, 60), scores, min_size=1, max_size=30), scores)
def test_reordering_keeps_every_candidate_and_no_shared_word_changes_nothing(
    hits: dict[int, float], idf: float
) -> None:
    ranked = sorted(hits.items(), key=lambda item: (-item[1], item[0]))
    assert shared_words.reordered(ranked, {}, {}) == ranked
    parts = {"w": {key: min(score, idf) for key, score in hits.items()}}
    again = shared_words.reordered(ranked, parts, {"w": idf})
    assert sorted(key for key, _ in again) == sorted(hits)
    placed = [round(score, shared_words.TIE_DIGITS) for _, score in again]
    assert placed == sorted(placed, reverse=True)


@pytest.fixture(autouse=True)
def shared_words_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name here is also its file's context (file_context.py), a rule
    tried first: these tests check the shared-word rule on its own."""
    monkeypatch.setattr(file_context, "CHECK_SHARE", 2.0)


def fill(index: SqliteIndex, tmp_path: Path) -> str:
    """The named corpus indexed; the named turn's chunk hash."""
    wanted = ""
    for source, texts in named_corpus(tmp_path):
        record, chunks = make_file(source, texts)
        index.replace_file(record, chunks, {})
        wanted = wanted or next(
            (c.chunk.chunk_hash for c in chunks if c.chunk.content == NAMED_TURN), ""
        )
    return wanted


# Which candidates hold a word: the index's doclists (few postings), or the
# candidates tokenized in a scratch table (0: always). Both must agree.
HOLDER_CHECKS = pytest.mark.parametrize(
    "index_check_postings", [lexical.INDEX_CHECK_POSTINGS, 0], ids=["doclists", "tokenized"]
)


@HOLDER_CHECKS
def test_the_turn_about_the_query_outranks_short_turns_repeating_the_name(
    index: SqliteIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_check_postings: int
) -> None:
    monkeypatch.setattr(lexical, "INDEX_CHECK_POSTINGS", index_check_postings)
    wanted = fill(index, tmp_path)
    _mode, hits = index.search(NAMED_QUERY, None, 5)
    assert hits[0].chunk.chunk_hash == wanted
    # The name still counts: every short turn holding it stays above the
    # meetings that hold only the other word.
    assert all("Caroline" in hit.chunk.content for hit in hits)


def test_a_pool_holding_every_match_keeps_bm25s_order(index: SqliteIndex, tmp_path: Path) -> None:
    # k = 80 asks for 160 candidates: all 79 matches fit, none is left out
    # for the name's sake, and BM25's own order stands (the short turns first).
    wanted = fill(index, tmp_path)
    _mode, hits = index.search(NAMED_QUERY, None, 80)
    assert len(hits) == 79
    assert hits[0].chunk.content.startswith("- Caroline: thanks")
    assert wanted in [hit.chunk.chunk_hash for hit in hits]


@HOLDER_CHECKS
def test_an_index_opened_read_only_orders_its_candidates_alike(
    index: SqliteIndex,
    index_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    index_check_postings: int,
) -> None:
    # Another project's index (scope all) is opened read-only: its scratch
    # tables live on a private connection, and the order is the same.
    monkeypatch.setattr(lexical, "INDEX_CHECK_POSTINGS", index_check_postings)
    wanted = fill(index, tmp_path)
    index.close()
    view = open_read_only(index_path, IndexSettings())
    assert view is not None
    try:
        _mode, hits = view.search(NAMED_QUERY, None, 5)
    finally:
        view.close()
    assert hits[0].chunk.chunk_hash == wanted
