"""The LoCoMo decomposition's pure parts (benchmarks/quality/locomo_decompose.py):
one leg's evidence borrowed from the store alone, ranked by the real fusion."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"
sys.path.insert(0, str(BENCH))

from locomo_decompose import (  # noqa: E402
    Asked,
    mixed,
    rankings,
    recording,
)

from memlane.index.legs import relevance  # noqa: E402
from memlane.index.legs.relevance import Evidence  # noqa: E402

ALONE = Evidence(
    cosine={1: 0.5, 3: 0.3},
    coverage={3: 0.9, 1: 0.2},
    mean_cosine=0.3,
    rows=100,
    bm25={3: 5.0, 1: 1.0},
)
INSIDE = Evidence(
    cosine={1: 0.5, 2: 0.45},
    coverage={1: 0.6},
    mean_cosine=0.1,
    rows=100_000,
    bm25={1: 4.0},
)


def test_borrowing_the_lexical_leg_keeps_the_big_stores_dense_evidence() -> None:
    evidence = mixed(dense_from=INSIDE, lexical_from=ALONE)
    assert evidence.coverage == ALONE.coverage and evidence.bm25 == ALONE.bm25
    assert (evidence.mean_cosine, evidence.rows) == (INSIDE.mean_cosine, INSIDE.rows)
    # The big store's cosines, and the borrowed candidates' own (same vectors).
    assert evidence.cosine == {1: 0.5, 2: 0.45, 3: 0.3}


def test_borrowing_the_dense_leg_keeps_the_big_stores_lexical_evidence() -> None:
    evidence = mixed(dense_from=ALONE, lexical_from=INSIDE)
    assert evidence.coverage == INSIDE.coverage and evidence.bm25 == INSIDE.bm25
    assert (evidence.mean_cosine, evidence.rows) == (ALONE.mean_cosine, ALONE.rows)
    assert evidence.cosine == {1: 0.5, 3: 0.3}


def _crowded(gold_bm25: float, others_bm25: float) -> Evidence:
    """Twelve candidates: the gold one (row 0) and eleven others, the same
    cosine each, so the lexical evidence decides."""
    rows = range(12)
    bm25 = {row: (gold_bm25 if row == 0 else others_bm25 - 0.01 * row) for row in rows}
    return Evidence(
        cosine=dict.fromkeys(rows, 0.4),
        coverage={row: min(1.0, score / 10) for row, score in bm25.items()},
        mean_cosine=0.1,
        rows=1_000,
        bm25=bm25,
    )


def test_each_ranking_is_the_fusions_own_and_says_which_leg_lost_the_question() -> None:
    turn = {row: f"D1:{row + 1}" for row in range(12)}
    # Alone the gold turn leads lexically; inside, eleven others outweigh it.
    asked = [Asked(("D1:1",), _crowded(9.0, 3.0), _crowded(2.0, 8.0))]
    totals = rankings(asked, turn.__getitem__)
    assert totals == {
        "alone": 1.0,
        "inside": 0.0,
        "inside, lexical alone-store": 1.0,
        "inside, dense alone-store": 0.0,
    }


def test_recording_sees_each_fusion_and_puts_the_function_back() -> None:
    original = relevance.evidence_ranking
    with recording() as seen:
        ranked = relevance.evidence_ranking(ALONE, "hybrid")
    assert seen == [ALONE]
    assert ranked == original(ALONE, "hybrid")
    assert relevance.evidence_ranking is original
