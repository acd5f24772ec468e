"""The evidence fusion and its calibrated score (index/legs/relevance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import make_file, src

from memlane.core.settings import AUTO_CONTEXT_SCORE_FLOOR, SEARCH_MIN_SCORE
from memlane.index.legs.relevance import (
    CALIBRATIONS,
    DENSE_FLOOR_SPAN,
    LEXICAL_LEG_WEIGHT,
    PRIOR_MEAN_COSINE,
    Evidence,
    chance_cosine,
    dense_places,
    evidence_ranking,
    lexical_gate,
)
from memlane.index.sqlite.notes import SqliteIndex

# A collection of 500 notes whose cosines with the query average 0.2.
ROWS, MEAN = 500, 0.2


def evidence(cosine: dict[int, float], coverage: dict[int, float] | None = None) -> Evidence:
    coverage = coverage or {}
    return Evidence(cosine, coverage, MEAN, ROWS, dict(coverage))


def test_one_incidental_shared_word_does_not_beat_a_clearly_better_meaning() -> None:
    # 1: the paraphrased note (no word in common); 2: shares one common word
    ranked = evidence_ranking(evidence({1: 0.55, 2: 0.30}, {2: 0.15}), "hybrid")
    assert [rowid for rowid, _ in ranked] == [1, 2]


def test_a_query_whose_words_a_note_covers_ranks_it_by_those_words() -> None:
    # 2 holds every telling word of the question; 1 is a little closer in meaning
    ranked = evidence_ranking(evidence({1: 0.50, 2: 0.44}, {2: 0.9, 3: 0.2}), "hybrid")
    assert ranked[0][0] == 2


def test_scores_are_in_bounds_and_fall_with_rank() -> None:
    ranked = evidence_ranking(evidence({1: 0.6, 2: 0.5, 3: 0.1}, {1: 0.4, 4: 0.8}), "hybrid")
    scores = [score for _, score in ranked]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert {rowid for rowid, _ in ranked} == {1, 2, 3, 4}


def test_the_top_score_is_the_query_calibration() -> None:
    top = 0.6
    ranked = evidence_ranking(evidence({1: top, 2: 0.3}), "semantic")
    expected = CALIBRATIONS["semantic"](top, chance_cosine(top, MEAN, ROWS), 0.0)
    assert ranked[0] == (1, pytest.approx(expected))


def test_nothing_like_the_query_scores_below_the_search_floor() -> None:
    # best cosine barely above the collection's chance level, no shared word
    weak = evidence_ranking(evidence({1: 0.21, 2: 0.2}), "hybrid")
    assert weak[0][1] < SEARCH_MIN_SCORE
    strong = evidence_ranking(evidence({1: 0.62, 2: 0.3}, {1: 0.7}), "hybrid")
    assert strong[0][1] >= AUTO_CONTEXT_SCORE_FLOOR


def test_a_candidates_score_does_not_depend_on_how_deep_the_legs_went() -> None:
    # The same store and query: legs that returned 3 candidates each, and legs
    # that went deeper and also returned weak ones (a Milvus search asks for
    # fewer rows than the SQLite one may).
    shallow = evidence({1: 0.62, 2: 0.55, 3: 0.41}, {1: 0.5, 4: 0.7, 2: 0.2})
    deep = evidence(
        {1: 0.62, 2: 0.55, 3: 0.41, 5: 0.25, 6: 0.01},
        {1: 0.5, 4: 0.7, 2: 0.2, 7: 0.1, 8: 0.05},
    )
    deep.cosine[4] = 0.05  # a lexical candidate far below chance in meaning
    shallow.cosine[4] = 0.05
    top_of_deep = dict(evidence_ranking(deep, "hybrid"))
    for rowid, score in evidence_ranking(shallow, "hybrid"):
        assert top_of_deep[rowid] == pytest.approx(score)


def test_the_dense_places_run_from_the_top_to_a_floor_below_chance() -> None:
    top, chance = 0.6, 0.2
    floor = chance - DENSE_FLOOR_SPAN * (top - chance)
    places = dense_places({1: top, 2: chance, 3: floor, 4: floor - 0.1}, top, chance)
    assert places[1] == pytest.approx(1.0)
    assert places[2] == pytest.approx(DENSE_FLOOR_SPAN / (1 + DENSE_FLOOR_SPAN))
    assert places[3] == pytest.approx(0.0) and places[4] == 0.0
    # No lead over chance to measure from: placed among themselves.
    assert dense_places({1: 0.1, 2: 0.05}, 0.1, 0.3) == {1: 1.0, 2: 0.0}


def test_lexical_mode_scores_by_coverage_alone() -> None:
    full = evidence_ranking(Evidence({}, {1: 1.0}, 0.0, 0, {1: 9.0}), "lexical")
    little = evidence_ranking(Evidence({}, {1: 0.05}, 0.0, 0, {1: 0.4}), "lexical")
    assert full[0][1] > 0.99 and little[0][1] < 0.2


def test_chance_level_is_the_prior_in_a_tiny_store_and_the_mean_in_a_big_one() -> None:
    # a store of one note: the mean is the best cosine itself and says nothing
    assert chance_cosine(0.7, 0.7, 1) == pytest.approx(PRIOR_MEAN_COSINE)
    assert chance_cosine(0.7, 0.1, 100_000) == pytest.approx(0.1, abs=1e-3)


def test_the_lexical_gate_opens_with_the_top_coverage() -> None:
    gates = [lexical_gate(c / 10) for c in range(11)]
    assert gates == sorted(gates)
    assert gates[0] < 0.02 and gates[-1] == pytest.approx(LEXICAL_LEG_WEIGHT, rel=1e-3)


def test_coverage_is_the_share_of_the_query_a_chunk_holds(tmp_path: Path) -> None:
    texts = [f"- filler note number {n} about lunch" for n in range(20)]
    texts.append("- the kafka topic naming convention uses a version suffix")
    record, chunks = make_file(src(tmp_path, "2026-01-01.md"), texts)
    with SqliteIndex(tmp_path / "i.sqlite") as index:
        index.replace_file(record, chunks, {})
        _, every_word = index.search("kafka topic naming", None, 1)
        _, one_word = index.search("kafka consumer lag alerts", None, 1)
        _, absent = index.search("xyzzy plugh", None, 1)
    assert every_word[0].score > 0.9
    assert one_word and one_word[0].score < every_word[0].score
    assert absent == []
