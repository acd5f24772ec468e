"""``TopicSurfacer``: the session's auto-surfacing state (the card cache and what
was already injected), and the selection: chunk score and card evidence
combined, the floors, the optional side query."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memlane.core.settings import TopicSettings
from memlane.engine.topics.surfacing.cards import Card, read_card, topic_card_files, with_terms
from memlane.engine.topics.surfacing.render import render_topics
from memlane.engine.topics.surfacing.rerank import rerank
from memlane.engine.topics.surfacing.signals import (
    chunk_scores,
    cosines,
    lexical_scores,
    ready_embedder,
)

if TYPE_CHECKING:
    from memlane.core.types import SearchMode
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.llm.base import LLM

log = logging.getLogger("memlane.engine.topics.surfacing")

#: The prompt is searched with this many characters at most (as auto-context).
QUERY_CHARS = 500
#: Weights of the relative chunk score and the absolute card score.
CHUNK_WEIGHT = 0.5
CARD_WEIGHT = 0.5
#: A topic is surfaced from this combined score ...
SCORE_FLOOR = 0.55
#: ... and only with this much absolute evidence from its card (cosine
#: rescaled, or lexical match), so a relative chunk score alone never
#: injects anything. Calibration (``python tests/engine/test_surfacing.py``:
#: 20 topics, 21 relevant and 11 unrelated prompts, bundled model): the
#: expected topic scored 0.68-1.00 with evidence 0.35-1.00 (21/21 pass); the
#: best topic of an unrelated prompt 0.20-0.46 with evidence 0.00-0.02
#: (0/11); the best wrong topic of a relevant prompt passes in 2/21 (both
#: plausibly related). Lexical only (no model), with the index's porter
#: stems (docs/adr/0012): 21/21, 0/11, 3/21.
EVIDENCE_FLOOR = 0.15
#: MiniLM cosines between unrelated short texts sit around 0-0.2, between
#: a question and the description it is about around 0.4-0.7: rescale
#: [COSINE_ZERO, COSINE_ONE] to [0, 1].
COSINE_ZERO = 0.15
COSINE_ONE = 0.55
#: Topic cards embedded during one prompt at most (~5 ms each, bundled model).
EMBED_PER_PROMPT = 16
#: The side query sees at most this many candidates.
RERANK_CANDIDATES = 10
#: Time kept back from the deadline for rendering after a rerank.
RENDER_RESERVE_S = 0.03


@dataclass(frozen=True)
class Candidate:
    """One topic's evidence for a prompt."""

    slug: str
    score: float
    chunk: float  # best fused hit score of the topic's chunks, relative
    cosine: float  # prompt vs card embedding, raw (0 without an embedder)
    lexical: float  # IDF-weighted share of the prompt's terms the card holds
    evidence: float  # max(rescaled cosine, lexical): the absolute part

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "score": round(self.score, 4),
            "chunk": round(self.chunk, 4),
            "cosine": round(self.cosine, 4),
            "lexical": round(self.lexical, 4),
            "evidence": round(self.evidence, 4),
        }


@dataclass
class Surfaced:
    """What one prompt gets: the message (None: nothing) and its topics."""

    text: str | None
    slugs: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    reranked: str | None = None  # "llm", or why the retrieval order stayed
    elapsed_ms: float = 0.0


class TopicSurfacer:
    """Per-session auto-surfacing: selection, rendering and dedup state."""

    def __init__(
        self,
        settings: TopicSettings,
        *,
        llm: LLM | None = None,
        score_floor: float = SCORE_FLOOR,
        evidence_floor: float = EVIDENCE_FLOOR,
    ) -> None:
        self.settings = settings
        # The side query runs only when a model is configured for it:
        # without one the host's model would be called on every prompt.
        self.llm = llm if settings.model_for("auto_surfacing") else None
        self.score_floor = score_floor
        self.evidence_floor = evidence_floor
        self.already_injected: set[str] = set()
        self.last_candidates: list[Candidate] = []
        self._cards: dict[str, Card] = {}
        self._embedder_name: str | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and self.settings.auto_surfacing_enabled

    def cards_state(self) -> tuple[str | None, dict[str, Card]]:
        """The embedded cards and the model they were embedded with, for the project's
        next session (engine/live/worker.py ``WarmWorkers``)."""
        with self._lock:
            return self._embedder_name, dict(self._cards)

    def adopt(self, state: tuple[str | None, dict[str, Card]]) -> None:
        """Start from an ended session's cards (``cards_state``): ``warm`` then reads and
        embeds only the topic files that changed since. Ignored once this one has cards."""
        embedder_name, cards = state
        with self._lock:
            if not self._cards:
                self._embedder_name, self._cards = embedder_name, dict(cards)

    @property
    def embedded_cards(self) -> int:
        """How many cached topic cards carry an embedding: all of them after
        ``warm``; without it, each prompt embeds at most ``EMBED_PER_PROMPT``
        more (the bound that keeps a cold prompt inside its deadline)."""
        with self._lock:
            return sum(1 for card in self._cards.values() if card.vector is not None)

    # -- cards ---------------------------------------------------------------------------

    def warm(self, memory: ProjectMemory) -> int:
        """Read and embed every topic card now, waiting for the model if it
        is loading: call it once on the worker thread at session start, so
        prompts only redo the files that changed. Returns the card count."""
        return len(self._refresh(memory, embed_limit=None, wait_for_model=True))

    def _refresh(
        self,
        memory: ProjectMemory,
        *,
        embed_limit: int | None = EMBED_PER_PROMPT,
        wait_for_model: bool = False,
    ) -> dict[str, Card]:
        """The cards of the topic files as they are now (embed_limit 0: none embedded)."""
        with self._lock:
            old = self._cards
        fresh: dict[str, Card] = {}
        read: list[Card] = []
        for slug, path, key in topic_card_files(memory.scope.store):
            card = old.get(slug)
            if card is None or card.key != key or card.path != path:
                card = read_card(slug, path, key)
                if card is None:
                    continue
                read.append(card)
            fresh[slug] = card
        with_terms(read)
        if embed_limit != 0:
            self._embed(memory, fresh, embed_limit, wait_for_model)
        with self._lock:
            self._cards = fresh
        return fresh

    def _embed(
        self, memory: ProjectMemory, cards: dict[str, Card], limit: int | None, wait: bool
    ) -> None:
        embedder = ready_embedder(memory, wait=wait)
        if embedder is None:
            return  # keep what was embedded; a loading model comes back
        name = getattr(embedder, "name", None)
        if name != self._embedder_name:
            # Another model: every cached vector is in the wrong space.
            for card in cards.values():
                card.vector = None
            self._embedder_name = name
        todo = [card for card in cards.values() if card.vector is None]
        # A prompt embeds a bounded number of cards (a store changed behind
        # the session's back, or no warm-up): the rest carry no cosine until
        # a later prompt, rather than this one missing its deadline.
        if limit is not None:
            todo = todo[:limit]
        if not todo:
            return
        try:
            vectors = embedder.embed([card.text for card in todo])
        except Exception as exc:
            log.info("auto-surfacing cannot embed topic cards: %s", exc)
            return
        for card, vector in zip(todo, vectors, strict=False):
            card.vector = vector

    # -- selection -----------------------------------------------------------------------

    def candidates(
        self, memory: ProjectMemory, prompt: str, *, mode: SearchMode = "hybrid"
    ) -> list[Candidate]:
        """Every topic with any evidence for *prompt*, best first (no floor).

        *mode* "lexical": the chunk score from the lexical leg alone, so
        nothing waits for a model that is still loading or an endpoint that
        is slow: no card is embedded and no cosine is taken."""
        query = prompt.strip()[:QUERY_CHARS]
        if not query:
            return []
        lexical_only = mode == "lexical"
        cards = self._refresh(memory, embed_limit=0 if lexical_only else EMBED_PER_PROMPT)
        if not cards:
            return []
        chunk = chunk_scores(memory, query, cards, mode=mode)
        cosine = {} if lexical_only else cosines(memory, query, cards)
        lexical = lexical_scores(query, cards)
        out = []
        for slug in cards:
            c, cos, lex = chunk.get(slug, 0.0), cosine.get(slug, 0.0), lexical.get(slug, 0.0)
            rescaled = min(1.0, max(0.0, (cos - COSINE_ZERO) / (COSINE_ONE - COSINE_ZERO)))
            evidence = max(rescaled, lex)
            if c <= 0 and evidence <= 0:
                continue
            score = CHUNK_WEIGHT * c + CARD_WEIGHT * evidence
            out.append(Candidate(slug, score, c, cos, lex, evidence))
        out.sort(key=lambda cand: (-cand.score, cand.slug))
        return out

    def select(
        self,
        memory: ProjectMemory,
        prompt: str,
        *,
        already: set[str] | frozenset[str] = frozenset(),
        deadline: float | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[str]:
        """Up to ``max_files`` relevant topic slugs not in *already*, best first.

        *deadline* (``time.monotonic()`` value) bounds the optional LLM
        rerank; without it the rerank gets ``auto_context.cap_ms``.
        """
        return self._select(memory, prompt, already=already, deadline=deadline, mode=mode)[0]

    def _select(
        self,
        memory: ProjectMemory,
        prompt: str,
        *,
        already: set[str] | frozenset[str],
        deadline: float | None,
        mode: SearchMode = "hybrid",
    ) -> tuple[list[str], list[Candidate], str | None]:
        limit = max(0, self.settings.auto_surfacing_max_files)
        found = self.candidates(memory, prompt, mode=mode)
        self.last_candidates = found
        passing = [
            c
            for c in found
            if c.slug not in already
            and c.score >= self.score_floor
            and c.evidence >= self.evidence_floor
        ]
        chosen = [c.slug for c in passing]
        how: str | None = None
        if self.llm is not None and chosen and limit:
            if deadline is None:
                deadline = time.monotonic() + memory.config.session.auto_context_cap_ms / 1000
            cards = self._cards
            reranked, how = rerank(
                self.llm,
                prompt,
                [cards[s] for s in chosen[:RERANK_CANDIDATES] if s in cards],
                deadline - RENDER_RESERVE_S,
            )
            if reranked is not None:
                chosen = reranked
        return chosen[:limit], found, how

    # -- rendering -----------------------------------------------------------------------

    def render(self, memory: ProjectMemory, slugs: Iterable[str]) -> str:
        """The hidden message for *slugs* ("" for none that could be read)."""
        return render_topics(memory.scope.store, self.settings, list(slugs))[0]

    # -- the whole step ------------------------------------------------------------------

    def surface(
        self,
        memory: ProjectMemory,
        prompt: str,
        *,
        deadline: float | None = None,
        mode: SearchMode = "hybrid",
    ) -> Surfaced:
        """``select`` + ``render`` for one prompt, skipping ``already_injected``.

        Does not mark anything injected: call ``mark_injected(result.slugs)``
        once the text has actually been handed to the host.
        """
        started = time.perf_counter()
        if not self.enabled:
            return Surfaced(None)
        with self._lock:
            already = frozenset(self.already_injected)
        slugs, found, how = self._select(
            memory, prompt, already=already, deadline=deadline, mode=mode
        )
        text, shown = render_topics(memory.scope.store, self.settings, slugs) if slugs else ("", [])
        return Surfaced(
            text or None,
            shown,
            found,
            how,
            (time.perf_counter() - started) * 1000,
        )

    def mark_injected(self, slugs: Iterable[str]) -> None:
        with self._lock:
            self.already_injected.update(slugs)

    def forget_injected(self) -> None:
        """After a context compaction the injected text may be gone: allow it again."""
        with self._lock:
            self.already_injected.clear()
