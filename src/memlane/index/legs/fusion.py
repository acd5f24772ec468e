"""Fusing ranked candidate lists (one per retrieval leg) into one ranking.

A leg is a best-first list of ``(row id, score)`` with higher scores better
(bm25 negated, cosine as is); each leg has a weight. Every method returns
scores in [0, 1] where 1.0 means "ranked first by every leg that was asked",
so ``weights`` has one entry per leg that was *asked*, even when that leg
came back empty: a hybrid search whose dense leg found nothing cannot
pretend that both legs agreed.

- ``rrf``: reciprocal rank fusion with k = 60, memsearch's method (ranks
  only, legs weighted equally), kept for parity.
- ``wrrf``: the same with the legs weighted by ``index.alpha``.
- ``convex``: a convex combination of per-leg min-max normalised scores,
  ``alpha * dense + (1 - alpha) * lexical``. Unlike RRF it keeps how far
  apart candidates are within a leg, so a clear lexical winner is not
  pulled level with the dense leg's noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memlane.core.errors import ConfigError

RRF_K = 60  # memsearch's RRFRanker(k=60)

# A scored leg: (row id, score), best first, higher is better. The result is
# (row id, fused score), best first.
ScoredLeg = Sequence[tuple[int, float]]
Fused = list[tuple[int, float]]
FusionMethod = Callable[[Sequence[ScoredLeg], Sequence[float], int], Fused]


def _finish(totals: dict[int, float], weight_sum: float) -> Fused:
    fused = [(row_id, min(1.0, max(0.0, total / weight_sum))) for row_id, total in totals.items()]
    # Ties broken by row id for a deterministic order.
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused


def _check(legs: Sequence[object], weights: Sequence[float]) -> float:
    if len(legs) != len(weights) or not weights:
        raise ValueError("one weight per leg, and at least one leg")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("weights must be >= 0 with a positive sum")
    return float(sum(weights))


def weighted_rrf(legs: Sequence[Sequence[int]], weights: Sequence[float], k: int = RRF_K) -> Fused:
    """Reciprocal rank fusion over row-id lists, normalised by its maximum.

    score(d) = sum over legs of w_leg / (k + rank_leg(d)) (rank 1-based),
    divided by ``sum(w) / (k + 1)``, the score of a document ranked first by
    every leg.
    """
    weight_sum = _check(legs, weights)
    # (k + 1) / (k + rank) is exactly 1.0 at rank 1, so the best-in-all
    # score is exactly 1.0 without a float epsilon.
    totals: dict[int, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        for rank, row_id in enumerate(leg, start=1):
            totals[row_id] = totals.get(row_id, 0.0) + weight * (k + 1) / (k + rank)
    return _finish(totals, weight_sum)


def rrf(legs: Sequence[Sequence[int]], n_legs: int, k: int = RRF_K) -> Fused:
    """Plain RRF (memsearch's): ``n_legs`` legs asked, weighted equally.

    ``n_legs`` may exceed ``len(legs)``: the missing legs count as empty.
    """
    if n_legs < 1:
        raise ValueError("n_legs must be >= 1")
    padded = [*legs, *([[]] * (n_legs - len(legs)))]
    return weighted_rrf(padded, [1.0] * n_legs, k)


def normalised(leg: ScoredLeg) -> list[tuple[int, float]]:
    """Min-max normalise a leg's scores to [0, 1] (its best scores 1.0).

    A leg whose candidates all score the same gives them all 1.0.
    """
    if not leg:
        return []
    scores = [score for _, score in leg]
    top, bottom = max(scores), min(scores)
    spread = top - bottom
    if spread <= 0:
        return [(row_id, 1.0) for row_id, _ in leg]
    return [(row_id, (score - bottom) / spread) for row_id, score in leg]


def convex(legs: Sequence[ScoredLeg], weights: Sequence[float]) -> Fused:
    """sum_leg w_leg * minmax_leg(d) / sum(w); absent from a leg counts 0."""
    weight_sum = _check(legs, weights)
    totals: dict[int, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        for row_id, score in normalised(leg):
            totals[row_id] = totals.get(row_id, 0.0) + weight * score
    return _finish(totals, weight_sum)


def _ids(leg: ScoredLeg) -> list[int]:
    return [row_id for row_id, _ in leg]


def _rrf_method(legs: Sequence[ScoredLeg], weights: Sequence[float], k: int) -> Fused:
    return weighted_rrf([_ids(leg) for leg in legs], [1.0] * len(legs), k)


def _wrrf_method(legs: Sequence[ScoredLeg], weights: Sequence[float], k: int) -> Fused:
    return weighted_rrf([_ids(leg) for leg in legs], weights, k)


def _convex_method(legs: Sequence[ScoredLeg], weights: Sequence[float], k: int) -> Fused:
    return convex(legs, weights)


FUSION_METHODS: dict[str, FusionMethod] = {
    "rrf": _rrf_method,
    "wrrf": _wrrf_method,
    "convex": _convex_method,
}


#: The default fusion, ``index/legs/relevance.py``: each leg weighed by its
#: evidence for the query, scores calibrated. It needs each candidate's
#: evidence, not only the legs' lists, so it has no entry in FUSION_METHODS.
EVIDENCE = "evidence"


def fusion_method(name: str) -> FusionMethod | None:
    """The fusion function called ``name`` (settings ``[index] fusion``);
    None for ``evidence``, which ranks by evidence instead (relevance.py)."""
    if name == EVIDENCE:
        return None
    try:
        return FUSION_METHODS[name]
    except KeyError:
        known = ", ".join([EVIDENCE, *sorted(FUSION_METHODS)])
        raise ConfigError(f"unknown index fusion {name!r}", hint=f"use one of: {known}") from None
