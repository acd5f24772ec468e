"""The default fusion ("evidence") and what a hit's score means.

Each candidate of a search carries two pieces of absolute evidence:

- its **cosine** with the query (dense leg, the bundled model's raw cosine);
- its **coverage** of the query (lexical leg): bm25 over the bm25 that a
  document of average length holding each query term once would get
  (``LexicalQuery.ideal``), clipped to [0, 1]. One shared word covers little
  of a five-word question; all of its rare words cover it all.

**Ranking.** The dense leg always counts; the lexical leg counts in
proportion to how much of the query its best match covers (a logistic gate
on the top coverage, midpoint ``COVERAGE_GATE_MIDPOINT``). So a paraphrase
whose best lexical match is one incidental word ("slots", "job") is ranked
by meaning, and a question that names what it wants (a person, a library, an
error) is ranked by its words as well. Within a leg, candidates are placed
relative to that leg's best (cosines between the top and a floor below the
store's chance cosine, ``dense_places``; coverage over the top coverage),
which keeps how far apart they are and does not depend on how many
candidates a leg returned. A fixed weight
on per-query min-max scores (the former default) lets a one-word lexical
match outrank a clearly better semantic one.

**Score.** A hit's score is ``relevance(query) * fused / fused_of_the_top``:
the top hit's score is the calibrated probability that the store holds what
the query asks for, from absolute evidence only (how far the best cosine
stands above the collection's mean cosine for this query, the best cosine
itself, the top coverage), fitted by ``benchmarks/quality/calibrate.py`` on
the quality sets (real questions against queries the store does not answer,
the classes weighted equally); the other hits scale down with their fused
evidence, so scores fall with rank. The same evidence and curve serve
journal, topic and session hits, so ``kind: all`` merges them on one scale.
See docs/adr/0010-evidence-fusion.md for the measurements and what 0.3,
0.5 and 0.8 mean.

The other fusions (``rrf``, ``wrrf``, ``convex``) keep their rank-based
scores (memsearch parity); ``search.min_score`` is on this module's scale.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memlane.core.cosine_scale import REFERENCE_SCALE, CosineScale
from memlane.core.settings import IndexSettings
from memlane.core.types import SearchMode
from memlane.index.legs.dense import BoundMatrix, DenseResult
from memlane.index.legs.fusion import EVIDENCE, Fused, FusionMethod
from memlane.index.legs.lexical import LexicalLeg, LexicalRanking
from memlane.index.protocol import SearchFilters

#: How much the lexical leg can count against the dense leg's 1.0, once its
#: best match covers the query well.
LEXICAL_LEG_WEIGHT = 1.5
#: Top coverage at which the lexical leg gets half its weight, and how fast
#: the gate opens around it.
COVERAGE_GATE_MIDPOINT = 0.35
COVERAGE_GATE_WIDTH = 0.075
#: What the bundled model's cosine between a question and an unrelated note
#: averages (its scale on the probe pairs, core/cosine_scale.py), and how many
#: rows' worth of weight that prior has. The chance level a best cosine is
#: compared with is the mean over the *other* searched rows, pulled toward
#: the prior: in a store of a few notes the mean says little (in a store of
#: one it is the best cosine itself). The prior was 0.2, the conversational
#: sets' level, and held a small store of distilled notes (whose own level is
#: near 0.05) to a chance level it never has: a right answer among six
#: notes scored 0.004 (ADR 0029).
PRIOR_MEAN_COSINE = REFERENCE_SCALE.unrelated_mean
PRIOR_ROWS = 20.0
#: Where the dense leg's scale ends below the chance cosine, in units of the
#: top cosine's lead over chance (``dense_places``). A pool of 100–200
#: candidates ended there or lower on the quality sets (its lowest cosine, a
#: lexical candidate's, sat 0.4–0.6 of that lead below chance at the median):
#: 0.5 ranks as well on each of them (ADR 0048).
DENSE_FLOOR_SPAN = 0.5


def _sigmoid(z: float) -> float:
    if z < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class QueryCalibration:
    """P(the store answers the query) =
    sigmoid(bias + margin * (best cosine - chance cosine)
            + cosine * best cosine + coverage * top coverage)."""

    bias: float
    margin: float
    cosine: float
    coverage: float

    def __call__(self, top_cosine: float, chance_cosine: float, top_coverage: float) -> float:
        return _sigmoid(
            self.bias
            + self.margin * (top_cosine - chance_cosine)
            + self.cosine * top_cosine
            + self.coverage * top_coverage
        )


# Fitted by benchmarks/quality/calibrate.py (ADR 0010). One curve per search
# mode: a lexical-only search has no cosine to go on, a semantic-only one no
# coverage.
CALIBRATIONS: dict[SearchMode, QueryCalibration] = {
    "hybrid": QueryCalibration(bias=-7.36, margin=9.33, cosine=11.37, coverage=1.71),
    "semantic": QueryCalibration(bias=-7.48, margin=9.76, cosine=12.67, coverage=0.0),
    "lexical": QueryCalibration(bias=-2.33, margin=0.0, cosine=0.0, coverage=7.59),
}


def lexical_gate(top_coverage: float) -> float:
    """The lexical leg's weight for a query whose best match covers this much."""
    return LEXICAL_LEG_WEIGHT * _sigmoid(
        (top_coverage - COVERAGE_GATE_MIDPOINT) / COVERAGE_GATE_WIDTH
    )


def chance_cosine(top_cosine: float, mean_cosine: float, rows: int) -> float:
    """The mean cosine of the searched rows other than the best, shrunk
    toward ``PRIOR_MEAN_COSINE`` (see there)."""
    others = mean_cosine * rows - top_cosine if rows > 0 else 0.0
    return (others + PRIOR_MEAN_COSINE * PRIOR_ROWS) / (max(rows - 1, 0) + PRIOR_ROWS)


@dataclass(frozen=True)
class Evidence:
    """Every candidate of either leg: its cosine and its coverage, and the
    searched rows' mean cosine (``rows`` of them)."""

    cosine: dict[int, float]
    coverage: dict[int, float]
    mean_cosine: float
    rows: int = 0
    #: Each lexical candidate's bm25 (higher is better); it orders the
    #: lexical leg where coverage, clipped at 1, would tie.
    bm25: dict[int, float] = field(default_factory=dict)

    @property
    def candidates(self) -> list[int]:
        return list(dict.fromkeys([*self.cosine, *self.coverage]))


def gather(
    dense: DenseResult | None,
    lexical: LexicalRanking | None,
    cosines_of: Callable[[Iterable[int]], dict[int, float]],
) -> Evidence:
    """Both pieces of evidence for every candidate of either leg: a lexical
    candidate the dense leg did not return still has a cosine."""
    cosine = dict(dense.hits) if dense is not None else {}
    coverage: dict[int, float] = {}
    bm25 = dict(lexical.hits) if lexical is not None else {}
    if lexical is not None:
        coverage = {rowid: lexical.query.evidence(score) for rowid, score in lexical.hits}
        missing = [rowid for rowid in coverage if rowid not in cosine]
        if missing and dense is not None:
            cosine.update(cosines_of(missing))
    if dense is None:
        return Evidence(cosine, coverage, 0.0, 0, bm25)
    return Evidence(cosine, coverage, dense.mean_cosine, dense.rows, bm25)


def _relative(values: dict[int, float], low: float | None = None) -> dict[int, float]:
    """Each value placed between the lowest (0) and the highest (1)."""
    if not values:
        return {}
    top = max(values.values())
    bottom = min(values.values()) if low is None else low
    spread = top - bottom
    if spread <= 0:
        return dict.fromkeys(values, 1.0)
    return {rowid: (value - bottom) / spread for rowid, value in values.items()}


def dense_places(cosine: dict[int, float], top: float, chance: float) -> dict[int, float]:
    """Each candidate's cosine placed between the top cosine (1) and a floor
    ``DENSE_FLOOR_SPAN`` times the top's lead over chance below the chance
    cosine (0, and below it). The place depends on the query and the store's
    chance level only, not on which other candidates the leg returned, so a
    deeper or shallower pool, or a backend that fetches fewer rows, gives a
    candidate the same score (ADR 0048). A top at chance level or below has
    no lead to measure from: the candidates are then placed min-max."""
    floor = chance - DENSE_FLOOR_SPAN * (top - chance)
    spread = top - floor
    if spread <= 1e-9:
        return _relative(cosine)
    return {rowid: max(0.0, (value - floor) / spread) for rowid, value in cosine.items()}


def on_reference_scale(evidence: Evidence, scale: CosineScale | None) -> Evidence:
    """The evidence with its cosines moved onto the bundled model's scale
    (core/cosine_scale.py): the same order within the leg, calibrated scores."""
    if scale is None or scale == REFERENCE_SCALE:
        return evidence
    return Evidence(
        {rowid: scale.to_reference(c) for rowid, c in evidence.cosine.items()},
        evidence.coverage,
        scale.to_reference(evidence.mean_cosine) if evidence.rows else evidence.mean_cosine,
        evidence.rows,
        evidence.bm25,
    )


def evidence_ranking(
    evidence: Evidence, mode: SearchMode, scale: CosineScale | None = None
) -> Fused:
    """(rowid, score) best first, ties by rowid (see the module docstring);
    ``scale`` is the model's when it is not the bundled one."""
    candidates = evidence.candidates
    if not candidates:
        return []
    evidence = on_reference_scale(evidence, scale)
    top_cosine = max(evidence.cosine.values(), default=0.0)
    top_coverage = max(evidence.coverage.values(), default=0.0)
    chance = chance_cosine(top_cosine, evidence.mean_cosine, evidence.rows)
    dense_part = dense_places(evidence.cosine, top_cosine, chance) if mode != "lexical" else {}
    # bm25 is placed against its top with 0 as the bottom: a chunk sharing
    # no term has no lexical evidence, however the others scored.
    lexical_part = (
        _relative(evidence.bm25 or evidence.coverage, low=0.0) if mode != "semantic" else {}
    )
    weight = 1.0 if mode == "lexical" else lexical_gate(top_coverage)
    fused = {
        rowid: dense_part.get(rowid, 0.0) + weight * lexical_part.get(rowid, 0.0)
        for rowid in candidates
    }
    best = max(fused.values())
    relevance = CALIBRATIONS[mode](top_cosine, chance, top_coverage)
    scored = [
        (rowid, relevance * value / best if best > 0 else 0.0) for rowid, value in fused.items()
    ]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored


def search(
    conn: sqlite3.Connection,
    lexical_leg: LexicalLeg,
    matrix: BoundMatrix | None,
    vector: npt.NDArray[np.float32] | None,
    query: str,
    mode: SearchMode,
    *,
    n_lexical: int,
    n_dense: int,
    filters: SearchFilters | None,
    cache_key: object,
    settings: IndexSettings,
    method: FusionMethod | None,
    rrf_k: int,
) -> Fused:
    """Run the legs ``mode`` asks for and fuse them (the notes and the
    sessions index alike): the ranked (rowid, score), whichever fusion is set."""
    dense = None
    if mode != "lexical" and matrix is not None and vector is not None:
        dense = matrix.search(vector, n_dense, filters)
    ranking = None
    if mode != "semantic":
        ranking = lexical_leg.rank(conn, query, n_lexical, filters, cache_key)
    if settings.fusion == EVIDENCE or method is None:

        def cosines_of(rowids: Iterable[int]) -> dict[int, float]:
            return (
                matrix.cosines(vector, rowids) if matrix is not None and vector is not None else {}
            )

        return evidence_ranking(gather(dense, ranking, cosines_of), mode, settings.cosine_scale)
    return rank_fusion(method, dense, ranking, alpha=settings.alpha, rrf_k=rrf_k)


def rank_fusion(
    method: FusionMethod,
    dense: DenseResult | None,
    lexical: LexicalRanking | None,
    *,
    alpha: float,
    rrf_k: int,
) -> Fused:
    """rrf, wrrf or convex over the legs that were asked (their own scores)."""
    legs: list[Sequence[tuple[int, float]]] = []
    weights: list[float] = []
    if dense is not None:
        legs.append(dense.hits)
        weights.append(alpha if lexical is not None else 1.0)
    if lexical is not None:
        legs.append(lexical.hits)
        weights.append(1.0 - alpha if dense is not None else 1.0)
    if not legs or sum(weights) <= 0:
        return []
    return method(legs, weights, rrf_k)
