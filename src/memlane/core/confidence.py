"""Confidence bands: what a search score means to the reader of a hit.

A score is the calibrated probability that the store holds what the query
asks for (index/legs/relevance.py). An explicit search (the agent's
``memory_search``, the CLI, the viewer) is a request for candidates, so it
returns everything in the weak band or above, each hit labelled; what
memory pushes into an agent's context unasked (auto-context, surfacing,
auto-recall) keeps the strict floor of the strong band. docs/search.md
explains the bands with the measurements behind them (ADR 0028).
"""

from __future__ import annotations

from typing import Literal

Band = Literal["strong", "possible", "weak"]

#: The store very likely holds the answer: the floor of what memory pushes
#: into an agent's context unasked (``AUTO_CONTEXT_SCORE_FLOOR``). On the
#: quality sets (benchmarks/quality/trust.py) 4.8 % of queries the store
#: cannot answer reach it (near-misses of the project's own domain among
#: them), against 20 % at 0.5, the former floor; a quarter of real
#: questions still do.
STRONG = 0.9
#: Related evidence: worth reading, may well be the answer.
POSSIBLE = 0.3
#: Some evidence beyond chance for this store: a candidate to check, not a
#: fact to rely on. Below it a search answers "nothing relevant"; it is the
#: default of ``search.min_score``.
WEAK = 0.01

BAND_MEANINGS: dict[Band, str] = {
    "strong": "very likely what was asked",
    "possible": "related and may well be the answer",
    "weak": "a distant candidate to check before relying on it",
}


def band_of(score: float) -> Band | None:
    """The band of a calibrated score, None below the weak band."""
    if score >= STRONG:
        return "strong"
    if score >= POSSIBLE:
        return "possible"
    if score >= WEAK:
        return "weak"
    return None
