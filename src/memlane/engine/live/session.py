"""``Session``: one agent session's lifecycle, whatever the host (docs/session.md).

Hosts translate their events into these calls; no business rule lives in a
host. What happens, per pi-memsearch's runtime documentation:

* ``start``: in the background, the catch-up index, the embedder warmed once,
  what killed sessions left in their capture logs written, the sessions
  layer caught up and swept (woken now); the stable snapshot built (with the
  MEMORY.md topic index and the sessions-layer primer). Until the catch-up is
  done a search first indexes what other tools wrote (``sessions_catching_up``).
* ``before_agent_start(prompt)``: the snapshot (rebuilt first when the local
  date rolled over) and one hidden message gathering, within one hard
  deadline on a warm worker: auto-context hits over the score floor,
  surfaced topic files, and past messages when the prompt refers to the past.
* ``agent_settled(exchange)``: gates, redact, and the exchange appended to the
  capture log (engine/journal/capture_log.py) before the answer; then
  in the background distil → append one anchored entry → its capture-log record
  done → debounced index, then the durable learnings as topic entries; the
  transcript's new messages go to the sessions layer. What memlane's own tools
  returned is not captured again (engine/journal/echo.py).
* ``compacted()`` / ``refresh_snapshot()``: rebuild the snapshot.
* ``shutdown()``: flush pending captures (one that cannot finish in time is
  written as a digest, never dropped), let their extractions finish, and
  settle the indexer, racing ``SHUTDOWN_CAP_MS``.

The jobs live next door: engine/live/capture.py, engine/live/auto_context.py,
engine/live/background.py (started the same way by hosts without a session).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.settings import SessionSettings
from memlane.core.types import Exchange
from memlane.engine.journal.echo import RecallLog, is_memlane_tool, judge
from memlane.engine.journal.schedule import IndexScheduler
from memlane.engine.journal.snapshot import Snapshot
from memlane.engine.live.auto_context import AutoContext
from memlane.engine.live.background import Background
from memlane.engine.live.capture import RECOVERY_REASON, SHUTDOWN_REASON, Capture
from memlane.engine.live.injection_ledger import record as record_injection
from memlane.engine.live.session_internals import SessionInternals
from memlane.engine.live.state import (
    AutoContextState,
    CaptureState,
    ExtractionState,
    Flush,
    Injection,
    Queued,
    RecallState,
    SurfacingState,
)
from memlane.engine.live.switch import SettingsFollower, followed_settings
from memlane.llm.host import HostCall  # the host's llm.complete, as Session.open takes it

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.shared.results import Status
    from memlane.engine.topics.surfacing import TopicSurfacer
    from memlane.llm.base import LLM

# Re-exported: the shutdown and recovery digests are part of a session's contract.
__all__ = ["RECOVERY_REASON", "SHUTDOWN_REASON", "HostCall", "Session"]

log = logging.getLogger("memlane.session")

# Shutdown gives pending captures this share of the cap to distil (what still runs
# then is written as a digest; the indexer keeps the rest of the cap) ...
CAPTURE_SHARE_OF_SHUTDOWN = 0.6
# ... and their extractions this share (from the shutdown's start); the rest indexes.
EXTRACTION_SHARE_OF_SHUTDOWN = 0.8


class Session:
    """One agent session over one project's ``Memory``."""

    def __init__(
        self,
        memory: Memory,
        *,
        host: str = "cli",
        session_id: str,
        transcript_path: str | None = None,
        llm: LLM | None = None,
        settings: SessionSettings | None = None,
    ) -> None:
        self.memory = memory
        self.host = host
        self.session_id = session_id
        self.transcript_path = (
            str(Path(transcript_path).expanduser().absolute()) if transcript_path else None
        )
        self.llm = llm
        self.settings = settings or memory.config.session
        self.notices: list[str] = list(memory.config.problems)  # a hook has no terminal
        if memory.scope.worktree is not None and memory.scope.worktree.problem:
            self.notices.append(memory.scope.worktree.problem)  # not shared: ADR 0035
        self._host_llm_available = False
        self.host_call: HostCall | None = None  # the host's llm.complete (a dream's model)
        self.capture = CaptureState(
            enabled=self.settings.capture_enabled,
            llm=llm.name if llm is not None else "none (entries are verbatim digests)",
        )
        self._topic_settings = memory.config.topics
        surfacer: TopicSurfacer | None = None
        if self._topic_settings.enabled and self._topic_settings.auto_surfacing_enabled:
            from memlane.engine.topics.surfacing import TopicSurfacer

            surfacer = TopicSurfacer(self._topic_settings)
        self._auto = AutoContext(
            memory,
            self.settings,
            session_id=session_id,
            surfacer=surfacer,
            notices=self.notices,
        )
        self.extraction = ExtractionState(
            enabled=self._topic_settings.enabled
            and self._topic_settings.extract_memories_enabled
            and (llm is not None and self.capture.enabled)
        )
        self._sessions_settings = memory.config.sessions
        self._background: Background | None = None
        self._owns_background = True
        self._primer_line: str | None = None
        self._recall_log = RecallLog()  # what memlane handed the agent since the last exchange
        self._lock = threading.Lock()  # the snapshot
        self._start_lock = threading.Lock()
        self._background_started = False
        self._snapshot = self._build_snapshot()
        self._indexer = IndexScheduler(
            memory.fork,
            debounce_s=self.settings.index_debounce_ms / 1000,
            backoff_delays_s=tuple(d / 1000 for d in self.settings.backoff_delays_ms),
        )
        self._switch = SettingsFollower(memory)
        self._captures = Capture(
            memory,
            self.settings,
            session_id=session_id,
            host=host,
            transcript_path=self.transcript_path,
            llm=llm,
            state=self.capture,
            extraction=self.extraction,
            indexer=self._indexer,
            notices=self.notices,
        )

    @classmethod
    def start(
        cls,
        memory: Memory,
        *,
        host: str = "cli",
        session_id: str,
        transcript_path: str | None = None,
        llm: LLM | None = None,
        settings: SessionSettings | None = None,
        background: Background | None = None,
        defer_background: bool = False,
    ) -> Session:
        """session_start: catch-up index and embedder warm-up in the background.

        ``background``: the project's own warm-up and sessions layer, when a
        long-lived host keeps one per project (the warm engine); the session
        then uses it and leaves it running at its end. Without it the session
        starts its own and stops it at shutdown.

        ``defer_background``: ``internals.start_background()`` is left to the host, to
        call once its agent has the answer (which then has the cores to itself).
        """
        session = cls(
            memory,
            host=host,
            session_id=session_id,
            transcript_path=transcript_path,
            llm=llm,
            settings=settings,
        )
        # The embedder warm-up and the sessions layer's catch-up and sweep: what
        # every host gets, with or without a session.
        session._owns_background = background is None
        session._background = background or Background(memory, session.notices).start()
        session._auto.workers = session._background.workers
        if not defer_background:
            session._start_background()
        if session._primer_line:
            session.notices.append(session._primer_line)
        if session._topic_settings.enabled:
            from memlane.engine.topics.dream import note_session_start, nudge

            try:
                note_session_start(memory.scope.store)
                text = nudge(memory.scope.store, session._topic_settings, memory.clock.now())
            except Exception as exc:  # bookkeeping must never stop a session
                log.info("dream bookkeeping failed: %s", exc)
                text = None
            if text:
                session.notices.append(text)
        if not session.capture.enabled:
            session.notices.append("capture is off (MEMLANE_CAPTURE=off): exchanges are not saved")
        return session

    def _start_background(self) -> None:
        """Once, and not after shutdown: the catch-up index, what killed sessions
        left in their capture logs (on a thread) and the warm auto-context worker."""
        with self._start_lock:
            if self._background_started:
                return
            self._background_started = True
        self._indexer.run_soon()
        if self._background is not None:
            self._background.wake()  # transcripts other agents wrote: swept now
        threading.Thread(
            target=self._captures.recover, name="memlane-capture-recovery", daemon=True
        ).start()
        self._auto.start()

    @classmethod
    def open(
        cls,
        memory: Memory,
        *,
        host: str = "cli",
        session_id: str,
        transcript_path: str | None = None,
        host_call: HostCall | None = None,
        background: Background | None = None,
        defer_background: bool = False,
    ) -> Session:
        """``start`` with the LLM chosen by the configuration.

        ``host_call`` is the host's ``llm.complete`` sender (pi's sidecar);
        with ``llm.provider = auto`` it makes the host's model distil (inside
        Claude Code, ``host="claude-code"``, the user's ``claude -p``). A
        configuration that cannot work is reported as a notice and capture
        falls back to verbatim digests: a session never fails to start
        because of its LLM.
        """
        from memlane.engine.live.llms import capture_llm, task_llm

        notices: list[str] = []
        # Made with capture off too: memory_compact uses it (its notices are then noise).
        capturing = memory.config.session.capture_enabled
        llm = capture_llm(memory, host_call, notices if capturing else [], host)
        session = cls.start(
            memory,
            host=host,
            session_id=session_id,
            transcript_path=transcript_path,
            llm=llm,
            background=background,
            defer_background=defer_background,
        )
        session._host_llm_available = host_call is not None
        session.host_call = host_call
        session.notices.extend(notices)
        surfacer = session._auto.surfacer
        if surfacer is not None:
            rerank = task_llm(memory, "auto_surfacing", host_call, session.notices, host)
            if rerank is not None:  # the surfacer reranks only when a model is configured
                surfacer.llm = rerank
        extract = task_llm(memory, "extract_memories", host_call, session.notices, host)
        session._captures.extract_llm = extract or session.llm
        return session

    @property
    def internals(self) -> SessionInternals:
        """What memlane's own hosts and tools use beyond the API (engine/live/
        session_internals.py): not for programs embedding memlane."""
        return SessionInternals(
            captures=self._captures,
            auto=self._auto,
            indexer=self._indexer,
            background=self._background,
            background_started=lambda: self._background_started,
            start_background=self._start_background,
            follow_settings=self._follow_settings,
        )

    @property
    def _sessions_layer(self) -> SessionsLayer | None:
        """The project's sessions layer once the background start opened it (its
        backfill may still run); None before, when off, or when it could not open."""
        return self._background.sessions_layer if self._background is not None else None

    @property
    def auto_context(self) -> AutoContextState:
        return self._auto.state

    @property
    def surfacing(self) -> SurfacingState:
        return self._auto.surfacing

    @property
    def recall(self) -> RecallState:
        return self._auto.recall

    # -- snapshot ---------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def _build_snapshot(self) -> Snapshot:
        from memlane.engine.live.session_snapshot import session_snapshot

        snapshot, primer_line = session_snapshot(self.memory, self.settings, self.session_id)
        if primer_line is not None:
            self._primer_line = primer_line
        return snapshot

    def refresh_snapshot(self) -> str:
        """Rebuild the snapshot (after a redaction, so removed text cannot survive)."""
        with self._lock:
            self._snapshot = self._build_snapshot()
            return self._snapshot.text

    def compacted(self) -> str:
        """session_compact: the host compacted its context; rebuild the snapshot."""
        return self.refresh_snapshot()

    # -- before_agent_start -----------------------------------------------------------

    def before_agent_start(self, prompt: str) -> Injection:
        self._follow_settings()
        with self._lock:
            if self.memory.clock.today() != self._snapshot.day:
                self._snapshot = self._build_snapshot()
            snapshot = self._snapshot
        message = self._auto.hidden_message(
            prompt, snapshot, self._sessions_layer, outside=not self._indexer.state.caught_up
        )
        if message:
            self._recall_log.note_injection(message)
        # Sizes only, for the viewer's cost per day (injection_ledger.py).
        record_injection(self.memory.scope, snapshot.day, len(snapshot.text), len(message or ""))
        return Injection(system_append=snapshot.text, message=message)

    # -- agent_settled ----------------------------------------------------------------

    def agent_settled(self, exchange: Exchange) -> Queued:
        """Gate the exchange and queue it for capture (distillation runs in the background)."""
        recalled = self._recall_log.take()  # whatever the outcome: the next exchange starts clean
        self._follow_settings()
        if self._captures.closed:
            return Queued(False, "the session has shut down")
        if not self.capture.enabled:
            return Queued(False, "capture is off")
        if exchange.aborted:
            self.capture.skipped += 1
            return Queued(False, "the run was aborted")
        if not exchange.user.strip():
            self.capture.skipped += 1
            return Queued(False, "there is no user message")
        if not exchange.assistant.strip():
            self.capture.skipped += 1
            return Queued(False, "the assistant produced no text")
        layer = self._sessions_layer
        transcript = exchange.transcript_path or self.transcript_path
        if layer is not None and transcript:
            layer.index_new(transcript)  # only enqueues: the host never waits
        other_tools = [name for name in exchange.tools or () if not is_memlane_tool(name)]
        verdict = judge(exchange.user, exchange.assistant, recalled, other_tools=other_tools)
        if verdict is not None and verdict.recall_only:
            self.capture.skipped_recall_only += 1
            return Queued(False, verdict.reason)
        restated = verdict is not None and verdict.restated > 0
        if verdict is not None and restated:
            self.capture.restated_dropped += verdict.restated
            exchange = replace(exchange, assistant=verdict.assistant)
        # It restated recalled memory, so it corrected none: none is offered.
        return self._captures.submit(exchange, offer_earlier=not restated)

    def _follow_settings(self) -> None:
        """Follow the live settings changed while the session runs (engine/live/switch.py):
        the topic tools, extraction and surfacing switch with ``topics.enabled`` (the
        snapshot's MEMORY.md block changes at its next rebuild, as the snapshot always
        does); auto-context and auto-recall take their new values for the next prompt."""
        changed = self._switch.poll()
        config = self.memory.config
        if "topics.enabled" in changed:
            enabled = bool(config.get("topics.enabled"))
            topics = config.topics
            self._topic_settings = self._captures.topic_settings = topics
            extracts = topics.extract_memories_enabled and self.capture.enabled
            self.extraction.enabled = enabled and extracts and self.llm is not None
            self._auto.switch_topics(enabled, topics)
            self.notices.append(
                f"topic memory switched {'on' if enabled else 'off'} (topics.enabled)"
            )
        if any(name.startswith(("auto_context.", "sessions.")) for name in changed):
            self.settings = followed_settings(self.settings, config)
            self._auto.follow(self.settings, config.sessions)

    def note_tool(self, name: str, arguments: dict[str, Any], result_text: str) -> None:
        """One of memlane's tools answered the agent: its text is recalled, not news."""
        self._recall_log.note_tool(name, arguments, result_text)

    # -- shutdown -----------------------------------------------------------------------

    def shutdown(
        self,
        cap_ms: int | None = None,
        *,
        host_released: Callable[[Flush], None] | None = None,
        drain_index: bool = False,
    ) -> Flush:
        """Flush pending captures and settle the indexer, racing the cap.

        ``host_released`` is called as soon as the host is no longer needed
        (every capture written, distilled or as a digest, and their extractions
        done or abandoned): a warm engine answers its host then, and the index
        settles after. ``drain_index``: what the indexer has not done by the cap
        still runs afterwards (a process that outlives the session, the warm
        engine); otherwise it is left to the next session's catch-up.
        """
        cap_s = (self.settings.shutdown_cap_ms if cap_ms is None else cap_ms) / 1000
        started = time.monotonic()
        with self._start_lock:
            self._background_started = True  # a deferred start after this: nothing
        jobs = self._captures.flush(
            started + cap_s * CAPTURE_SHARE_OF_SHUTDOWN,
            started + cap_s * EXTRACTION_SHARE_OF_SHUTDOWN,
        )
        if host_released is not None:
            pending = sum(1 for j in jobs if not j.done.is_set())
            unwritten = self._captures.unwritten
            host_released(Flush(flushed=pending == 0 and unwritten == 0, pending=pending))
        if self._background is not None and self._owns_background:
            self._background.stop(timeout_s=0.5)
        layer = self._sessions_layer
        if layer is not None:
            layer.flush(max(0.0, started + cap_s - time.monotonic()) / 2)
            if self._owns_background:
                layer.close()  # a shared one stays open for the project's next session
        settled = self._indexer.settle(max(0.0, started + cap_s - time.monotonic()))
        self._indexer.close(drain=drain_index)
        self._auto.stop()
        pending = sum(1 for j in jobs if not j.done.is_set())
        unwritten = self._captures.unwritten
        return Flush(flushed=settled and pending == 0 and unwritten == 0, pending=pending)

    # -- status -------------------------------------------------------------------------

    def status(self, *, probe: bool = False) -> Status:
        """memory_status: the doctor's report with this session's live state."""
        report = self.memory.status(probe=probe, host_llm=self._host_llm_available, host=self.host)
        report.session = self.status_json()
        report.capture["llm"] = self.capture.llm
        report.capture["enabled"] = self.capture.enabled
        from memlane.llm.budget import RAISE_HINT

        # The spent budget is said once: the report's own notice, when it has one.
        said = any(RAISE_HINT in notice for notice in report.notices)
        report.notices.extend(n for n in self.notices if not (said and RAISE_HINT in n))
        return report

    def status_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "snapshot_day": self._snapshot.day.isoformat(),
            "snapshot_chars": len(self._snapshot.text),
            "capture": self.capture.to_json(),
            "auto_context": self.auto_context.to_json(),
            "surfacing": self.surfacing.to_json(),
            "extraction": self.extraction.to_json(),
            "recall": self.recall.to_json(),
            "indexer": self._indexer.state.to_json(),
            "fresh_writes": self.memory.internals.fresh.to_json(),
            "pending_captures": self._captures.pending_captures,
        }
