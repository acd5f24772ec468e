from __future__ import annotations

import pytest

from memlane.core.errors import ConfigError
from memlane.index.legs.fusion import (
    FUSION_METHODS,
    RRF_K,
    convex,
    fusion_method,
    rrf,
    weighted_rrf,
)


def test_best_in_both_legs_scores_exactly_one() -> None:
    fused = rrf([[7, 3, 5], [7, 5, 9]], n_legs=2)
    assert fused[0] == (7, 1.0)
    assert all(0.0 <= score <= 1.0 for _, score in fused)


def test_single_leg_normalised_to_its_own_maximum() -> None:
    fused = rrf([[4, 2]], n_legs=1)
    assert fused[0] == (4, 1.0)
    assert fused[1][1] == pytest.approx((RRF_K + 1) / (RRF_K + 2))


def test_hybrid_with_one_empty_leg_tops_out_at_half() -> None:
    fused = rrf([[], [1, 2]], n_legs=2)
    assert fused[0] == (1, 0.5)


def test_rrf_sum_matches_memsearch_formula() -> None:
    fused = dict(rrf([[1, 2, 3], [3, 2, 1]], n_legs=2, k=60))
    expected = (1 / 62 + 1 / 62) / (2 / 61)
    assert fused[2] == pytest.approx(expected)


def test_ties_broken_by_rowid() -> None:
    fused = rrf([[9, 4], [4, 9]], n_legs=2)
    assert [rowid for rowid, _ in fused] == [4, 9]
    assert fused[0][1] == fused[1][1]


def test_unknown_fusion_is_a_config_error() -> None:
    assert fusion_method("rrf") is not None
    with pytest.raises(ConfigError):
        fusion_method("nope")


def test_convex_best_in_both_scores_one_and_bounds_hold() -> None:
    lexical = [(1, 12.0), (2, 6.0), (3, 3.0)]
    dense = [(2, 0.9), (1, 0.8), (4, 0.1)]
    fused = dict(convex([dense, lexical], [0.5, 0.5]))
    assert all(0.0 <= s <= 1.0 for s in fused.values())
    # 1: lexical 1.0, dense (0.8 - 0.1) / 0.8; 2: lexical 1/3, dense 1.0
    assert fused[1] == pytest.approx(0.5 * 1.0 + 0.5 * 0.7 / 0.8)
    assert fused[2] == pytest.approx(0.5 * (3 / 9) + 0.5 * 1.0)
    assert fused[3] == 0.0 and fused[4] == 0.0
    assert convex([[(5, 2.0)], [(5, 7.0)]], [0.3, 0.7]) == [(5, 1.0)]


def test_convex_keeps_gaps_that_rrf_erases() -> None:
    # A clear lexical winner with a middling dense rank beats a document the
    # dense leg barely prefers but the lexical leg ranks low.
    lexical = [(1, 20.0), (2, 2.0), (3, 1.0)]
    dense = [(2, 0.61), (3, 0.60), (1, 0.59), (4, 0.2)]
    assert convex([dense, lexical], [0.5, 0.5])[0][0] == 1
    assert rrf([[r for r, _ in dense], [r for r, _ in lexical]], n_legs=2)[0][0] == 2


def test_alpha_weights_the_legs_and_empty_leg_caps_the_score() -> None:
    dense = [(1, 0.9), (2, 0.1)]
    lexical = [(2, 9.0), (1, 1.0)]
    assert convex([dense, lexical], [0.8, 0.2])[0][0] == 1
    assert convex([dense, lexical], [0.2, 0.8])[0][0] == 2
    assert convex([[], [(3, 1.0)]], [0.25, 0.75]) == [(3, 0.75)]
    assert weighted_rrf([[], [3]], [0.25, 0.75]) == [(3, 0.75)]


def test_named_methods_share_one_signature() -> None:
    legs = [[(1, 0.9), (2, 0.5)], [(2, 3.0), (1, 1.0)]]
    for name in FUSION_METHODS:
        fused = fusion_method(name)(legs, [0.5, 0.5], RRF_K)
        assert {r for r, _ in fused} == {1, 2}
        assert all(0.0 <= s <= 1.0 for _, s in fused)
    assert fusion_method("rrf")(legs, [0.9, 0.1], RRF_K) == rrf([[1, 2], [2, 1]], n_legs=2)
    with pytest.raises(ValueError):
        convex(legs, [0.5])
