"""The evidence a prompt has for each topic card: the relative score of the
topic's indexed chunks, the cosine of the embeddings, the lexical match."""

from __future__ import annotations

import logging
import math
import os
from typing import TYPE_CHECKING, Any

from memlane.engine.topics.surfacing.cards import Card
from memlane.engine.topics.surfacing.terms import terms

if TYPE_CHECKING:
    from memlane.core.types import SearchMode
    from memlane.engine.shared.ports import ProjectMemory

log = logging.getLogger("memlane.engine.topics.surfacing")

#: Chunks asked of the index: several chunks per topic collapse into one slug.
SEARCH_K = 40
#: Lexical evidence of one prompt word found in a single card (halved for
#: a word two cards share, and so on).
DISTINCT_TERM_WEIGHT = 0.35


def ready_embedder(memory: ProjectMemory, *, wait: bool = False) -> Any:
    if memory.config.embedding.provider == "none":
        return None
    if not wait and not memory.embedding.ready:
        return None  # loading: the prompt must not wait for a model load
    try:
        return memory.embedding.embedder
    except Exception:
        return None


def chunk_scores(
    memory: ProjectMemory, query: str, cards: dict[str, Card], *, mode: SearchMode = "hybrid"
) -> dict[str, float]:
    try:
        # Every topic chunk that matches at all (min_score 0): surfacing's own
        # floors, on the card's absolute evidence, decide what is injected.
        hits = memory.search(
            query, SEARCH_K, kind="topic", sync=False, min_score=0.0, mode=mode
        ).hits
    except Exception as exc:
        log.info("auto-surfacing search failed: %s", exc)
        return {}
    by_path: dict[str, str] = {}
    for slug, card in cards.items():
        by_path[card.real] = slug
        by_path[str(card.path)] = slug
    # Relative to the best topic chunk: the chunk part says which topic the
    # prompt is closest to; the card's evidence is the absolute gate.
    best = max((hit.score for hit in hits), default=0.0)
    out: dict[str, float] = {}
    for hit in hits:
        if hit.superseded_by is not None:
            continue  # an outdated entry is no reason to surface its topic
        found = by_path.get(hit.source) or by_path.get(os.path.realpath(hit.source))
        relative = hit.score / best if best > 0 else 0.0
        if found is not None and relative > out.get(found, 0.0):
            out[found] = relative
    return out


def cosines(memory: ProjectMemory, query: str, cards: dict[str, Card]) -> dict[str, float]:
    embedder = ready_embedder(memory)
    with_vectors = [(slug, c.vector) for slug, c in cards.items() if c.vector is not None]
    if embedder is None or not with_vectors:
        return {}
    try:
        import numpy as np

        qvec = np.asarray(embedder.embed_query(query), dtype=np.float32).reshape(-1)
        matrix = np.stack([v for _, v in with_vectors])
        sims = matrix @ qvec
    except Exception as exc:
        log.info("auto-surfacing cannot embed the prompt: %s", exc)
        return {}
    return {slug: float(s) for (slug, _), s in zip(with_vectors, sims, strict=True)}


def lexical_scores(query: str, cards: dict[str, Card]) -> dict[str, float]:
    """Per card: the share of the prompt's IDF mass that the card holds, or
    the weight of the distinctive prompt words it holds, whichever is more.

    A prompt word no card holds gets the highest IDF, so a long prompt about
    something else dilutes a chance match instead of riding on it.
    """
    wanted = set(terms(query))
    if not wanted:
        return {}
    n = len(cards)
    df: dict[str, int] = {}
    for card in cards.values():
        for term in card.terms & wanted:
            df[term] = df.get(term, 0) + 1
    idf = {t: math.log(1 + (n + 1) / (df.get(t, 0) + 0.5)) for t in wanted}
    mass = sum(idf.values())
    out: dict[str, float] = {}
    for slug, card in cards.items():
        shared = wanted & card.terms
        if shared and mass > 0:
            coverage = sum(idf[t] for t in shared) / mass
            # A word only this card (or few cards) holds names the topic even
            # inside a long prompt about many things, where coverage is thin.
            naming = sum(DISTINCT_TERM_WEIGHT / df[t] for t in shared)
            out[slug] = min(1.0, max(coverage, naming))
    return out
