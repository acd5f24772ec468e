from __future__ import annotations

import pytest

from memlane.core.errors import ConfigError
from memlane.index.fusion import RRF_K, fusion_method, rrf


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
