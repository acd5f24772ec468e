"""Fusing ranked candidate lists (one per retrieval leg) into one ranking.

Only ranks are fused, never raw scores: bm25 and cosine live on unrelated
scales. Every method returns scores in [0, 1] where 1.0 means "ranked first
by every leg that was asked".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memlane.core.errors import ConfigError

RRF_K = 60  # memsearch's RRFRanker(k=60)

# A leg is a best-first list of row ids; the result is (row id, score),
# best first.
Leg = Sequence[int]
Fused = list[tuple[int, float]]
FusionMethod = Callable[[Sequence[Leg], int, int], Fused]


def rrf(legs: Sequence[Leg], n_legs: int, k: int = RRF_K) -> Fused:
    """Reciprocal rank fusion, normalised by its maximum.

    score(d) = sum over legs of 1 / (k + rank_leg(d)) (rank 1-based), divided
    by ``n_legs / (k + 1)``, the score of a document ranked first by all
    ``n_legs`` active legs. ``n_legs`` counts legs that were *asked*, even
    when one came back empty, so a hybrid search whose dense leg found
    nothing still tops out at 0.5 rather than pretending to agree.
    Ties are broken by row id for a deterministic order.
    """
    if n_legs < 1:
        raise ValueError("n_legs must be >= 1")
    # (k + 1) / (k + rank) is exactly 1.0 at rank 1, so the best-in-all
    # score is exactly 1.0 without a float epsilon.
    totals: dict[int, float] = {}
    for leg in legs:
        for rank, row_id in enumerate(leg, start=1):
            totals[row_id] = totals.get(row_id, 0.0) + (k + 1) / (k + rank)
    fused = [(row_id, min(1.0, total / n_legs)) for row_id, total in totals.items()]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused


def _rrf_method(legs: Sequence[Leg], n_legs: int, k: int) -> Fused:
    return rrf(legs, n_legs, k)


FUSION_METHODS: dict[str, FusionMethod] = {"rrf": _rrf_method}


def fusion_method(name: str) -> FusionMethod:
    """The fusion function called ``name`` (settings ``[index] fusion``)."""
    try:
        return FUSION_METHODS[name]
    except KeyError:
        known = ", ".join(sorted(FUSION_METHODS))
        raise ConfigError(f"unknown index fusion {name!r}", hint=f"use one of: {known}") from None
