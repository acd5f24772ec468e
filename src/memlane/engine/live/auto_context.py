"""Auto-context: what ``before_agent_start`` adds to a prompt, within one hard deadline.

One warm search worker (engine/live/worker.py) looks for three things at
once: journal hits over the score floor (auto-context), topic files worth
surfacing (engine/topics/surfacing/) and, when the prompt refers to the
past, messages of earlier sessions (engine/sessions/primer.py). A search
that misses the deadline is counted and dropped; too many misses in a row
restart the worker, and too many restarts turn auto-context off for the
session, with a notice saying so.

While that worker still loads the embedding model (about 1.5 s after the
session starts: all of a ``pi -p`` run), a second worker answers the same
three searches from the lexical (BM25) leg alone, within the same deadline
and on the same calibrated score scale (a lexical-only search has its own
calibration), so nothing waits for the model (docs/adr/0019). It is
retired once the model is warm.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memlane.core.types import Anchor, Hit, SearchMode
from memlane.engine.live.state import AutoContextState, RecallState, SurfacingState
from memlane.engine.live.worker import SearchWorker, WarmWorkers

if TYPE_CHECKING:
    from memlane.core.settings import SessionSettings, SessionsSettings, TopicSettings
    from memlane.engine.journal.snapshot import Snapshot
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.topics.surfacing import Surfaced, TopicSurfacer

log = logging.getLogger("memlane.session")

# Auto-context asks for this many hits beyond its top k: the session's own
# entries among them are dropped (AutoContext._own_entry).
OWN_ENTRY_ROOM = 5


def pushable(
    hits: list[Hit],
    settings: SessionSettings,
    snapshot: Snapshot,
    own_entry: Callable[[str], bool],
) -> list[Hit]:
    """The journal hits auto-context pushes with a prompt: over the floor,
    never an outdated fact, nothing the snapshot already holds, none of the
    session's own entries (*own_entry*), at most top k."""
    return [
        h
        for h in hits
        if h.score >= settings.auto_context_score_floor
        and h.superseded_by is None  # never push an outdated fact
        and not snapshot.contains(h.content)
        and not own_entry(h.content)
    ][: settings.auto_context_top_k]


class AutoContext:
    """One session's hidden message: its worker, its deadline and its counters."""

    def __init__(
        self,
        memory: Memory,
        settings: SessionSettings,
        *,
        session_id: str,
        surfacer: TopicSurfacer | None,
        notices: list[str],
    ) -> None:
        """``notices``: the session's, where turning auto-context off is said."""
        self.memory = memory
        self.settings = settings
        self.sessions_settings = memory.config.sessions
        self.session_id = session_id
        self.surfacer = surfacer
        self.notices = notices
        self.state = AutoContextState(enabled=settings.auto_context_enabled)
        self.surfacing = SurfacingState(enabled=surfacer is not None)
        self.recall = RecallState(mode=self.sessions_settings.auto_recall)
        self._worker: SearchWorker | None = None
        self._lexical: SearchWorker | None = None  # answers while the model warms
        #: The project's idle warm workers (the warm engine's, engine/live/background.py):
        #: this session takes one instead of warming its own, and gives its own back.
        self.workers: WarmWorkers | None = None
        self._respawning = False
        self._idle_surfacer: TopicSurfacer | None = None  # kept while topics are off

    def start(self) -> None:
        """Warm the worker now when anything will search on it, and the lexical
        one beside it when the model is not loaded yet."""
        if self.state.active or self.surfacer is not None:
            self._worker = self._new_worker()
            if self._model_will_load():
                self._lexical = self._new_lexical_worker()

    def stop(self) -> None:
        """The session ends: its worker goes to the project's next session when it is
        idle and healthy, else it stops."""
        worker, self._worker = self._worker, None
        if worker is not None:
            state = self.surfacer.cards_state() if self.surfacer is not None else None
            if self.workers is None or not self.workers.give(worker, self.memory.config, state):
                worker.stop()
        self._retire_lexical()

    def set_surfacer(self, surfacer: TopicSurfacer | None) -> None:
        """The topic memory was switched on (a new surfacer) or off (None)."""
        self.surfacer = surfacer
        self.surfacing.enabled = surfacer is not None

    def switch_topics(self, enabled: bool, topics: TopicSettings) -> None:
        """The topic memory was switched on or off while the session runs: the
        surfacer the session had keeps its rerank model and what it already
        injected; a new one only when there never was one."""
        surfacer: TopicSurfacer | None = None
        if enabled and topics.auto_surfacing_enabled:
            surfacer = self._idle_surfacer or self.surfacer
            if surfacer is None:
                from memlane.engine.topics.surfacing import TopicSurfacer

                surfacer = TopicSurfacer(topics)
            self._idle_surfacer = None
        elif self.surfacer is not None:
            self._idle_surfacer = self.surfacer
        self.set_surfacer(surfacer)

    def follow(self, settings: SessionSettings, sessions_settings: SessionsSettings) -> None:
        """Live settings changed while the session runs (engine/live/switch.py): the
        next prompt searches with them. Turned on, auto-context starts its worker at
        that prompt; a worker given up on after too many misses stays given up on."""
        self.settings = settings
        self.sessions_settings = sessions_settings
        self.state.enabled = settings.auto_context_enabled
        self.recall.mode = sessions_settings.auto_recall

    def _model_will_load(self) -> bool:
        return self.memory.config.embedding.provider != "none" and not self.memory.embedding.ready

    def _retire_lexical(self) -> None:
        if self._lexical is not None:
            self._lexical.stop()
            self._lexical = None

    def hidden_message(
        self,
        prompt: str,
        snapshot: Snapshot,
        layer: SessionsLayer | None,
        *,
        outside: bool = False,
    ) -> str | None:
        """Auto-context hits and surfaced topics, found by one warm worker in one deadline.

        ``outside``: the session's start has not indexed the store yet (a hook
        host starts it after the first prompt, docs/adr/0047): the worker first
        indexes the notes other tools changed on disk, for the lexical leg (the
        index run embeds them), so this prompt is not pushed an index without them.
        """
        from memlane.core.render import render_injection
        from memlane.engine.sessions.primer import recall_query, render_recall, wants_recall

        state = self.state
        settings = self.settings
        want_context = state.active
        surfacer = self.surfacer
        if state.enabled and not state.active:
            # Given up after too many deadline misses: the reference counts
            # every prompt that gets no search as an error.
            state.skippedError += 1
        # The query, not the whole prompt: the check runs before the deadline starts.
        want_recall = layer is not None and wants_recall(
            prompt[: settings.auto_context_query_limit], self.recall.mode
        )
        if state.disabled_reason is not None:
            surfacer = None  # the worker is unhealthy for every kind of search
            want_recall = False
        if not want_context and surfacer is None and not want_recall:
            return None
        query = prompt.strip()[: settings.auto_context_query_limit]
        if not query:
            if want_context:
                state.skippedEmpty += 1
            return None
        if self._worker is None:
            self._worker = self._new_worker()
        worker = self._worker
        warming = not worker.ready.is_set()
        if warming and self._respawning:
            # After a crash this is the respawn, which the reference counts
            # as an error.
            if want_context:
                state.skippedError += 1
            return None
        if warming:
            # The model, index or vector matrix is still loading: a search on
            # that worker would wait for it. The lexical leg answers instead.
            if self._lexical is None:
                self._lexical = self._new_lexical_worker()
            worker = self._lexical
        else:
            self._respawning = False
            self._retire_lexical()
        mode: SearchMode = "lexical" if warming else "hybrid"
        top_k = settings.auto_context_top_k
        cap_s = settings.auto_context_cap_ms / 1000
        started = time.perf_counter()
        deadline = time.monotonic() + cap_s

        recall_k = self.sessions_settings.auto_recall_top_k

        def work(
            memory: Memory,
        ) -> tuple[list[Hit] | None, Surfaced | None, list[Hit] | None]:
            from memlane.engine.lock_waits import read_waits

            # A lock another process holds is waited for only until the
            # deadline: the worker answers the next prompt, not a lock.
            left_ms = max(0.0, deadline - time.monotonic()) * 1000
            with read_waits(memory, within_ms=left_ms):
                return search_all(memory)

        def search_all(
            memory: Memory,
        ) -> tuple[list[Hit] | None, Surfaced | None, list[Hit] | None]:
            if outside:
                from memlane.engine.journal.catch_up import catch_up_outside

                said, _ = catch_up_outside(memory, embed=False)
                for notice in said:  # a push has no room for them: the search tools say them
                    log.info("auto-context: %s", notice)
            hits = (
                # Room for this session's own entries, which are dropped below.
                memory.search(query, top_k + OWN_ENTRY_ROOM, mode=mode, sync=False).hits
                if want_context
                else None
            )
            surfaced = (
                surfacer.surface(memory, prompt, deadline=deadline, mode=mode) if surfacer else None
            )
            recalled = None
            if want_recall and layer is not None:
                # Pushed unasked, so held to the push floor (core/confidence.py),
                # not to an explicit search's weak one.
                recalled = (
                    layer.search(recall_query(query), recall_k, mode=mode)
                    .to_search_result()
                    .at_least(settings.auto_context_score_floor)
                    .hits
                )
            return hits, surfaced, recalled

        reply = worker.submit(work)
        try:
            outcome, value = reply.get(timeout=cap_s)
        except queue.Empty:
            state.last_ms = (time.perf_counter() - started) * 1000
            if want_context:
                if warming:
                    # Nothing in time while the model loads: not the warm worker's miss.
                    state.skippedWarming += 1
                else:
                    state.skippedBudget += 1
            if surfacer is not None:
                self.surfacing.skipped_budget += 1
            if want_recall:
                self.recall.skipped_budget += 1
            if warming:
                return None
            state.consecutive_misses += 1
            if state.consecutive_misses >= settings.timeout_crash_threshold:
                self._worker_crashed()
            return None
        state.last_ms = (time.perf_counter() - started) * 1000
        state.consecutive_misses = 0
        if outcome == "error":
            if want_context:
                state.skippedError += 1
            if surfacer is not None:
                self.surfacing.skipped_error += 1
            if want_recall:
                self.recall.skipped_error += 1
            log.info("auto-context search failed: %s", value)
            return None
        hits, surfaced, recalled = value
        if warming:
            self._count_lexical(want_context=hits is not None, want_recall=recalled is not None)
        parts: list[str] = []
        if hits is not None:
            kept = pushable(hits, settings, snapshot, self._own_entry)
            text = render_injection(kept, settings.auto_context_char_budget, self._base())
            if text:
                state.injected += 1
                parts.append(text)
            else:
                state.skippedEmpty += 1
        if surfacer is not None and surfaced is not None:
            if surfaced.text:
                surfacer.mark_injected(surfaced.slugs)
                self.surfacing.injected += 1
                self.surfacing.topics.extend(surfaced.slugs)
                parts.append(surfaced.text)
            else:
                self.surfacing.skipped_empty += 1
        if recalled is not None:
            text = render_recall(recalled, self.sessions_settings.auto_recall_token_budget)
            if text:
                self.recall.injected += 1
                parts.append(text)
            else:
                self.recall.skipped_empty += 1
        return "\n\n".join(parts) if parts else None

    def _count_lexical(self, *, want_context: bool, want_recall: bool) -> None:
        """One prompt answered from the lexical leg while the model warmed."""
        if want_context:
            self.state.lexicalWhileWarming += 1
        if self.surfacer is not None:
            self.surfacing.lexical_while_warming += 1
        if want_recall:
            self.recall.lexical_while_warming += 1

    def _new_lexical_worker(self) -> SearchWorker:
        from memlane.engine.live.worker import lexical_warm_up

        # No catch-up that would embed (char limit 0): embedding waits for the model.
        return SearchWorker(self.memory.fork(catch_up_char_limit=0), first=lexical_warm_up)

    def _new_worker(self) -> SearchWorker:
        taken = self.workers.take(self.memory.config) if self.workers is not None else None
        if taken is not None:
            worker, state = taken
            if self.surfacer is not None:
                if state is not None:
                    self.surfacer.adopt(state)
                worker.submit(self.surfacer.warm)  # the topic files changed since, if any
            return worker
        warm_ups: tuple[Callable[[Memory], Any], ...] = ()
        if self.surfacer is not None:
            warm_ups = (self.surfacer.warm,)
        from memlane.engine.shared import fresh

        # Its searches first index this session's fresh writes, unless that
        # would embed more than the deadline allows (engine/shared/fresh.py).
        memory = self.memory.fork(catch_up_char_limit=fresh.AUTO_CONTEXT_CATCH_UP_CHARS)
        return SearchWorker(memory, warm_ups)

    def wait_ready(self, timeout_s: float) -> bool:
        """Start the auto-context worker if needed and wait until it is warm."""
        if self._worker is None:
            self._worker = self._new_worker()
        return self._worker.ready.wait(timeout_s)

    def _worker_crashed(self) -> None:
        state = self.state
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        state.consecutive_misses = 0
        self._respawning = True
        if state.respawns >= self.settings.max_sidecar_respawns:
            state.disabled_reason = (
                f"{self.settings.timeout_crash_threshold} consecutive searches missed the "
                f"{self.settings.auto_context_cap_ms} ms deadline after "
                f"{state.respawns} restarts"
            )
            self.notices.append(f"{state.disabled_reason}; auto-context is off for this session")
        else:
            state.respawns += 1

    def _base(self) -> str | None:
        return str(self.memory.scope.repository_dir)

    def _own_entry(self, content: str) -> bool:
        """An entry this session captured: its exchange is in the model's
        context already, and injecting it back (a repeated question outranks
        the note that answers it) would make recall feed on itself."""
        from memlane.store.anchor import parse_anchor

        anchor = parse_anchor(content)
        own = Anchor(session=self.session_id, turn="", transcript="")
        return anchor is not None and anchor.session == own.session
