"""``Session``: one agent session's lifecycle, whatever the host (DESIGN §6).

Hosts translate their events into these calls; no business rule lives in a
host. What happens, per reference/pi-memsearch-runtime.txt:

* ``start``: catch-up index in the background, the embedder warmed once in
  the background, what killed sessions left in their capture journals
  written in the background, the stable snapshot built (with the MEMORY.md topic index
  and the sessions-layer primer), the sessions layer caught up and swept.
* ``before_agent_start(prompt)``: the snapshot (rebuilt first when the local
  date rolled over) and one hidden message gathering, within one hard
  deadline on a warm worker: auto-context hits over the score floor,
  surfaced topic files, and past messages when the prompt refers to the past.
* ``agent_settled(exchange)``: gates, redact, and the exchange appended to
  the capture journal (engine/journal/capture_journal.py) before the answer; then in
  the background distil → append one anchored entry → its journal record
  done → debounced index, then the durable learnings as topic entries; the transcript's new messages are enqueued for
  the sessions layer. What memlane's own tools returned during the exchange
  is not captured again (engine/journal/echo.py): an answer that only restated it is
  skipped, any other loses its restated sentences.
* ``compacted()`` / ``refresh_snapshot()``: rebuild the snapshot.
* ``shutdown()``: flush pending captures (a capture that cannot finish in
  time is written as a digest, never dropped) and settle the indexer, racing
  ``SHUTDOWN_CAP_MS``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.faults import step
from memlane.core.settings import SessionSettings
from memlane.core.types import Anchor, Exchange, Hit
from memlane.engine.journal.echo import RecallLog, is_memlane_tool, judge
from memlane.engine.journal.schedule import IndexScheduler
from memlane.engine.journal.snapshot import Snapshot, build_snapshot
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
from memlane.engine.live.worker import SearchWorker

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.engine.journal.capture_journal import JournalFile
    from memlane.engine.project import Memory
    from memlane.engine.reports import Status
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.sessions.sweep import Sweeper
    from memlane.engine.topics.surfacing import Surfaced, TopicSurfacer
    from memlane.llm.base import LLM

log = logging.getLogger("memlane.session")

HostCall = Callable[[dict[str, Any], float], dict[str, Any]]

# Shutdown gives pending captures this share of the cap to finish their
# distillation; what is still running then is written as a digest, so the
# indexer keeps the rest of the cap to make those entries searchable.
CAPTURE_SHARE_OF_SHUTDOWN = 0.6
SHUTDOWN_REASON = "the session ended before distillation finished"
RECOVERY_REASON = (
    "recovered after the session that captured it ended; the LLM had failed another "
    "recovered exchange"
)


# How much of each text a shutdown digest redacts (the digest shows far less).
DIGEST_SOURCE_CHARS = 4000

# Auto-context asks for this many hits beyond its top k: the session's own
# entries among them are dropped (Session._own_entry).
OWN_ENTRY_ROOM = 5


def _with_llm(surfacer: TopicSurfacer, llm: LLM | None) -> TopicSurfacer:
    """The surfacer with its optional reranking LLM (only set when a model is configured)."""
    if llm is not None:
        surfacer.llm = llm
    return surfacer


class _CaptureJob:
    """One exchange on its way to the daily file; written exactly once.

    ``journal``/``key`` name its capture-journal record (None when the journal
    could not be written); ``redacted`` says the exchange already is;
    ``recovered`` jobs come from the journal of a session that is gone and
    are written at the moment that session acknowledged them (``at``).
    """

    def __init__(
        self,
        exchange: Exchange,
        anchor: Anchor,
        *,
        journal: JournalFile | None = None,
        key: str | None = None,
        redacted: bool = False,
        at: datetime | None = None,
        recovered: bool = False,
    ) -> None:
        self.exchange = exchange
        self.anchor = anchor
        self.journal = journal
        self.key = key
        self.redacted = redacted
        self.at = at
        self.recovered = recovered
        self._claimed = threading.Lock()
        self.done = threading.Event()

    def claim(self) -> bool:
        return self._claimed.acquire(blocking=False)


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
        self.notices: list[str] = []
        self.host_llm_available = False
        self.capture = CaptureState(
            enabled=self.settings.capture_enabled,
            llm=llm.name if llm is not None else "none (entries are verbatim digests)",
        )
        self.auto_context = AutoContextState(enabled=self.settings.auto_context_enabled)
        self.topic_settings = memory.config.topics
        self.surfacer: TopicSurfacer | None = None
        if self.topic_settings.enabled and self.topic_settings.auto_surfacing_enabled:
            from memlane.engine.topics.surfacing import TopicSurfacer

            self.surfacer = TopicSurfacer(self.topic_settings)
        self.surfacing = SurfacingState(enabled=self.surfacer is not None)
        self.extraction = ExtractionState(
            enabled=self.topic_settings.enabled
            and self.topic_settings.extract_memories_enabled
            and llm is not None
        )
        self._capture_memory: Memory | None = None
        self.extract_llm: LLM | None = llm  # extract_memories.model overrides (Session.open)
        self.sessions_settings = memory.config.sessions
        self._sessions_layer: SessionsLayer | None = None
        self._sweeper: Sweeper | None = None
        self.recall = RecallState(mode=self.sessions_settings.auto_recall)
        self._primer_line: str | None = None
        self._recall_log = RecallLog()  # what memlane handed the agent since the last exchange
        self._lock = threading.Lock()
        self._snapshot = self._build_snapshot()
        self._jobs: list[_CaptureJob] = []
        self._journal: JournalFile | None = None  # created by the first queued exchange
        self._adopted: list[JournalFile] = []  # journals of ended sessions, being recovered
        self._recovery_scanned = threading.Event()
        self._recovery_llm_failed = False
        self._capture_queue: queue.Queue[_CaptureJob | None] = queue.Queue()
        self._capture_thread: threading.Thread | None = None
        self._search_worker: SearchWorker | None = None
        self._respawning = False
        self._unwritten = 0  # exchanges whose entry could not be written
        self._closed = False
        self.indexer = IndexScheduler(
            memory.fork,
            debounce_s=self.settings.index_debounce_ms / 1000,
            backoff_delays_s=tuple(d / 1000 for d in self.settings.backoff_delays_ms),
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
    ) -> Session:
        """session_start: catch-up index and embedder warm-up in the background."""
        session = cls(
            memory,
            host=host,
            session_id=session_id,
            transcript_path=transcript_path,
            llm=llm,
            settings=settings,
        )
        session.indexer.run_soon()
        # What a killed session left in its capture journal: in the background,
        # so a start never waits for it.
        threading.Thread(
            target=session._recover, name="memlane-capture-recovery", daemon=True
        ).start()
        if memory.config.embedding.provider != "none":
            threading.Thread(
                target=memory.warm_embedder, name="memlane-embedder-warmup", daemon=True
            ).start()
        if session.auto_context.active or session.surfacer is not None:
            session._search_worker = session._new_worker()
        if session.sessions_settings.enabled:
            threading.Thread(
                target=session._start_sessions_layer, name="memlane-sessions-start", daemon=True
            ).start()
        if session._primer_line:
            session.notices.append(session._primer_line)
        if session.topic_settings.enabled:
            from memlane.engine.topics.dream import note_session_start, nudge

            try:
                note_session_start(memory.scope.store)
                text = nudge(memory.scope.store, session.topic_settings, memory.clock.now())
            except Exception as exc:  # bookkeeping must never stop a session
                log.info("dream bookkeeping failed: %s", exc)
                text = None
            if text:
                session.notices.append(text)
        if not session.capture.enabled:
            session.notices.append("capture is off (MEMLANE_CAPTURE=off): exchanges are not saved")
        return session

    @classmethod
    def open(
        cls,
        memory: Memory,
        *,
        host: str = "cli",
        session_id: str,
        transcript_path: str | None = None,
        host_call: HostCall | None = None,
    ) -> Session:
        """``start`` with the LLM chosen by the configuration.

        ``host_call`` is the host's ``llm.complete`` sender (pi's sidecar);
        with ``llm.provider = auto`` it makes the host's model distil. A
        configuration that cannot work is reported as a notice and capture
        falls back to verbatim digests: a session never fails to start
        because of its LLM.
        """
        from memlane.core.errors import ConfigError
        from memlane.llm.factory import make_llm

        notices: list[str] = []
        llm: LLM | None = None
        if memory.config.session.capture_enabled:
            try:
                llm = make_llm(memory.config.llm, host_call=host_call)
            except ConfigError as exc:
                notices.append(f"capture LLM unusable ({exc}); entries are verbatim digests")
        session = cls.start(
            memory,
            host=host,
            session_id=session_id,
            transcript_path=transcript_path,
            llm=llm,
        )
        session.host_llm_available = host_call is not None
        session.notices.extend(notices)
        # Per-task models of the topic layer (pi-memory's autoSurfacing.model,
        # extractMemories.model), on the same provider as capture.
        topics = memory.config.topics

        def task_llm(task: str) -> LLM | None:
            model = topics.model_for(task)
            if not model:
                return None
            try:
                return make_llm(
                    replace(memory.config.llm, capture_model=model), host_call=host_call
                )
            except ConfigError as exc:
                session.notices.append(f"{task} model {model!r} unusable ({exc})")
                return None

        if session.surfacer is not None:
            session.surfacer = _with_llm(session.surfacer, task_llm("auto_surfacing"))
        session.extract_llm = task_llm("extract_memories") or session.llm
        return session

    @property
    def clock(self) -> Clock:
        """The memory's clock: the session writes, rolls over and compacts on one calendar."""
        return self.memory.clock

    @property
    def sessions_layer(self) -> SessionsLayer | None:
        """The project's sessions layer, once the background start opened it.

        None before that (``start`` opens it on a thread, so a session never
        waits for it), when the sessions layer is off, or when it could not
        be opened (a notice says why). Its catch-up backfill may still be
        running when it appears: search it or read its store's stats to see
        what is in.
        """
        return self._sessions_layer

    # -- snapshot ---------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def _build_snapshot(self) -> Snapshot:
        from memlane.engine.topics.surfacing import memory_index_block

        extra = []
        primer_block = self._primer_block()
        if primer_block:
            extra.append(primer_block)
        topics_block = memory_index_block(self.memory.scope.store, self.memory.config.topics)
        if topics_block:
            extra.append(topics_block)
        return build_snapshot(
            self.memory.scope.store,
            self.clock.today(),
            today_chars=self.settings.snapshot_today_chars,
            yesterday_chars=self.settings.snapshot_yesterday_chars,
            extra_blocks=extra,
        )

    def _primer_block(self) -> str | None:
        """pi-lcm-memory's primer: the project's latest sessions, in the snapshot."""
        settings = self.memory.config.sessions
        if not (settings.enabled and settings.primer):
            return None
        from memlane.engine.sessions.primer import primer
        from memlane.engine.sessions.registry import open_store

        try:
            recent = open_store(self.memory).recent_sessions(settings.primer_top_k, self.session_id)
        except Exception as exc:  # a damaged sessions index must not stop a session
            log.info("primer unavailable: %s", exc)
            return None
        block, line = primer(recent, settings.primer_token_budget)
        self._primer_line = line
        return block

    def _start_sessions_layer(self) -> None:
        """Catch up with the project's transcripts, then sweep for new ones."""
        from memlane.engine.sessions.layer import SessionsLayer

        try:
            layer = SessionsLayer(self.memory)
            self._sessions_layer = layer
            layer.backfill()
            with self._lock:  # shutdown must see the sweeper, or it must not start
                if not self._closed:
                    sweeper = layer.sweeper()
                    sweeper.start()
                    self._sweeper = sweeper
        except Exception as exc:  # the sessions layer is an extra, never fatal
            log.warning("sessions layer unavailable: %s", exc)
            self.notices.append(f"sessions layer unavailable: {exc}")

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
        with self._lock:
            if self.clock.today() != self._snapshot.day:
                self._snapshot = self._build_snapshot()
            snapshot = self._snapshot
        message = self._hidden_message(prompt, snapshot)
        if message:
            self._recall_log.note_injection(message)
        return Injection(system_append=snapshot.text, message=message)

    def _hidden_message(self, prompt: str, snapshot: Snapshot) -> str | None:
        """Auto-context hits and surfaced topics, found by one warm worker in one deadline."""
        from memlane.core.render import render_injection
        from memlane.engine.sessions.primer import render_recall, wants_recall

        state = self.auto_context
        settings = self.settings
        want_context = state.active
        surfacer = self.surfacer
        if state.enabled and not state.active:
            # Given up after too many deadline misses: the reference counts
            # every prompt that gets no search as an error.
            state.skippedError += 1
        layer = self._sessions_layer
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
        if self._search_worker is None:
            self._search_worker = self._new_worker()
        if not self._search_worker.ready.is_set():
            # The model, index or vector matrix is still loading: a search
            # now would miss the deadline without saying anything about the
            # worker's health. After a crash this is the respawn, which the
            # reference counts as an error.
            if want_context:
                if self._respawning:
                    state.skippedError += 1
                else:
                    state.skippedWarming += 1
            return None
        self._respawning = False
        top_k = settings.auto_context_top_k
        cap_s = settings.auto_context_cap_ms / 1000
        started = time.perf_counter()
        deadline = time.monotonic() + cap_s

        recall_k = self.sessions_settings.auto_recall_top_k

        def work(
            memory: Memory,
        ) -> tuple[list[Hit] | None, Surfaced | None, list[Hit] | None]:
            hits = (
                # Room for this session's own entries, which are dropped below.
                memory.search(query, top_k + OWN_ENTRY_ROOM, mode="hybrid", sync=False).hits
                if want_context
                else None
            )
            surfaced = surfacer.surface(memory, prompt, deadline=deadline) if surfacer else None
            recalled = None
            if want_recall and layer is not None:
                # On the search scale: what memory_search would show.
                recalled = (
                    layer.search(query, recall_k)
                    .to_search_result()
                    .at_least(memory.min_score())
                    .hits
                )
            return hits, surfaced, recalled

        reply = self._search_worker.submit(work)
        try:
            outcome, value = reply.get(timeout=cap_s)
        except queue.Empty:
            state.last_ms = (time.perf_counter() - started) * 1000
            if want_context:
                state.skippedBudget += 1
            if surfacer is not None:
                self.surfacing.skipped_budget += 1
            if want_recall:
                self.recall.skipped_budget += 1
            state.consecutive_misses += 1
            if state.consecutive_misses >= settings.timeout_crash_threshold:
                self._search_worker_crashed()
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
        parts: list[str] = []
        if hits is not None:
            kept = [
                h
                for h in hits
                if h.score >= settings.auto_context_score_floor
                and not snapshot.contains(h.content)
                and not self._own_entry(h.content)
            ][:top_k]
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

    def _new_worker(self) -> SearchWorker:
        warm_ups: tuple[Callable[[Memory], Any], ...] = ()
        if self.surfacer is not None:
            warm_ups = (self.surfacer.warm,)
        from memlane.engine.journal import fresh

        # Its searches first index this session's fresh writes, unless that
        # would embed more than the deadline allows (engine/journal/fresh.py).
        memory = self.memory.fork(catch_up_char_limit=fresh.AUTO_CONTEXT_CATCH_UP_CHARS)
        return SearchWorker(memory, warm_ups)

    def wait_auto_context_ready(self, timeout_s: float) -> bool:
        """Start the auto-context worker if needed and wait until it is warm."""
        if self._search_worker is None:
            self._search_worker = self._new_worker()
        return self._search_worker.ready.wait(timeout_s)

    def _search_worker_crashed(self) -> None:
        state = self.auto_context
        if self._search_worker is not None:
            self._search_worker.stop()
            self._search_worker = None
        state.consecutive_misses = 0
        self._respawning = True
        if state.respawns >= self.settings.max_sidecar_respawns:
            state.disabled_reason = (
                f"{self.settings.timeout_crash_threshold} consecutive searches missed the "
                f"{self.settings.auto_context_cap_ms} ms deadline after "
                f"{state.respawns} restarts; auto-context is off for this session"
            )
            self.notices.append(state.disabled_reason)
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

    # -- agent_settled ----------------------------------------------------------------

    def agent_settled(self, exchange: Exchange) -> Queued:
        """Gate the exchange and queue it for capture (distillation runs in the background)."""
        recalled = self._recall_log.take()  # whatever the outcome: the next exchange starts clean
        if self._closed:
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
        if verdict is not None and verdict.restated:
            self.capture.restated_dropped += verdict.restated
            exchange = replace(exchange, assistant=verdict.assistant)
        job = self._new_job(exchange)
        with self._lock:
            if self._closed:  # shutdown began after the first check
                return Queued(False, "the session has shut down")
            # On disk before the answer: a kill from here on loses nothing.
            unjournaled = self._journal_locked(job)
            self._enqueue_locked(job)
            self.capture.queued += 1
        self._capture_queue.put(job)
        if unjournaled:
            return Queued(True, f"queued in memory only ({unjournaled})")
        step("capture.journaled")
        return Queued(True)

    def _new_job(self, exchange: Exchange) -> _CaptureJob:
        """The job of a gated exchange: its anchor fixed now, redacted when short enough
        to journal whole (a longer one is redacted in the background, its head journaled)."""
        from memlane.core.types import anchor_field
        from memlane.engine.journal.capture_journal import JOURNAL_TEXT_CHARS
        from memlane.engine.project import NO_TRANSCRIPT
        from memlane.store.daily import new_entry_id

        # Fixed before the journal record: the turn in the daily file's anchor
        # is how a recovery sees that a killed process had written the entry.
        anchor = Anchor(
            session=exchange.session_id or self.session_id,
            turn=anchor_field(exchange.entry_id or "", spaces=False) or new_entry_id(),
            transcript=exchange.transcript_path or self.transcript_path or NO_TRANSCRIPT,
        )
        short = max(len(exchange.user), len(exchange.assistant)) <= JOURNAL_TEXT_CHARS
        if short:
            exchange = self._redacted(exchange)
        return _CaptureJob(exchange, anchor, redacted=short, at=self.clock.now())

    def _journal_locked(self, job: _CaptureJob) -> str | None:
        """Append *job* to this session's capture journal; why not, when it could not be."""
        from memlane.engine.journal import capture_journal as cj

        assert job.at is not None
        if job.redacted:
            user, assistant, clipped = job.exchange.user, job.exchange.assistant, False
        else:
            user, user_clipped = cj.journal_copy(job.exchange.user)
            assistant, answer_clipped = cj.journal_copy(job.exchange.assistant)
            clipped = user_clipped or answer_clipped
        item = cj.Pending(cj.new_key(), job.anchor, job.at, user, assistant, clipped)
        try:
            if self._journal is None:
                header = {"session": self.session_id, "host": self.host}
                header["opened"] = job.at.isoformat()
                self._journal = cj.JournalFile.create(cj.journal_dir(self.memory.scope), header)
            self._journal.append(item)
        except cj.JournalError as exc:
            self.capture.unjournaled += 1
            self.capture.journal_error = exc.message
            log.warning("%s", exc.message)
            return exc.message
        job.journal, job.key = self._journal, item.key
        return None

    def _enqueue_locked(self, job: _CaptureJob) -> None:
        # Only unfinished jobs are kept: a long session settles thousands of
        # exchanges, and each finished one would hold its text for good.
        self._jobs = [j for j in self._jobs if not j.done.is_set()]
        self._jobs.append(job)
        if self._capture_thread is None:
            self._capture_thread = threading.Thread(
                target=self._capture_loop, name="memlane-capture", daemon=True
            )
            self._capture_thread.start()

    def _capture_loop(self) -> None:
        while True:
            job = self._capture_queue.get()
            if job is None:
                return
            captured: Exchange | None = None
            try:
                captured = self._capture(job)
            except Exception as exc:  # never let one exchange stop capture
                log.exception("capture failed")
                self.capture.write_errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                job.done.set()
            # After done: shutdown waits for the journal entry, never for this.
            wanted = self.extraction.enabled and not self._closed and not job.recovered
            if captured is not None and wanted:
                self._extract(captured)

    def _capture(self, job: _CaptureJob) -> Exchange | None:
        """Distil and write one exchange; the redacted exchange when distilled."""
        from memlane.engine.journal.capture_journal import DIGEST, DISTILLED
        from memlane.engine.journal.distill import digest, distill, failure_marker

        exchange = job.exchange if job.redacted else self._redacted(job.exchange)
        if job.done.is_set():
            return None
        if job.recovered and self._recovery_llm_failed:
            # The LLM failed a recovered exchange already: the rest go in as
            # digests instead of each waiting out the distillation timeout.
            if job.claim():
                self.capture.failed += 1
                self._write(job, [failure_marker(RECOVERY_REASON), *digest(exchange)], DIGEST)
            return None
        result = distill(exchange, self.llm, timeout_s=self.settings.distill_timeout_ms / 1000)
        step("capture.distilled")
        if not job.claim():
            return None  # shutdown wrote it as a digest meanwhile
        if result.failed:
            self.capture.failed += 1
            self.capture.last_failure = result.failed
            self._recovery_llm_failed = self._recovery_llm_failed or job.recovered
        elif self.llm is not None:
            self.capture.distilled += 1
        self._write(job, result.bullets, DISTILLED if result.distilled else DIGEST)
        return None if result.failed else exchange

    def _extract(self, exchange: Exchange) -> None:
        """Durable learnings of a distilled exchange become topic entries."""
        from memlane.engine.topics.extraction import extract

        if self._capture_memory is None:
            # The similarity check opens the index: this thread's own handle.
            self._capture_memory = self.memory.fork()
        state = self.extraction
        report = extract(
            self._capture_memory,
            exchange,
            self.extract_llm,
            settings=self.topic_settings,
            timeout_s=self.settings.distill_timeout_ms / 1000,
        )
        state.runs += 1
        state.written += len(report.written)
        state.skipped += len(report.skipped)
        if report.status == "failed":
            state.failed += 1
            state.last_error = report.error
        if report.wrote:
            self.indexer.note_write()

    def _redacted(self, exchange: Exchange) -> Exchange:
        from memlane.store.redaction import redact

        user = redact(exchange.user)
        assistant = redact(exchange.assistant)
        self.capture.redactions += user.count + assistant.count
        return replace(exchange, user=user.text, assistant=assistant.text)

    def _write(self, job: _CaptureJob, bullets: list[str], how: str) -> None:
        from memlane.core.errors import MemlaneError

        # A recovered exchange is written at the moment it was acknowledged,
        # into that day's file, as its own session would have written it.
        at = job.at if job.recovered else None
        try:
            entry = self.memory.write("\n".join(bullets), job.anchor, now=at)
        except MemlaneError as exc:
            self.capture.write_errors.append(exc.message)
            self._unwritten += 1
            return
        except Exception as exc:  # a bug must not silently drop an exchange
            log.exception("writing a captured exchange failed")
            self.capture.write_errors.append(f"{type(exc).__name__}: {exc}")
            self._unwritten += 1
            return
        self.capture.written += 1
        self.indexer.note_write()
        self._settle_journal(job, entry.path, how)

    def _settle_journal(self, job: _CaptureJob, path: str, how: str) -> None:
        """The entry is in the daily file: flush it, then its journal record is done."""
        from memlane.engine.journal import capture_journal as cj
        from memlane.engine.journal.capture_recovery import note_recovered

        if job.journal is None or job.key is None:
            return
        try:
            cj.fsync_file(path)
        except OSError as exc:
            # Not marked done: a recovery finds the entry's anchor instead.
            log.warning("cannot flush %s: %s", path, exc)
            return
        step("capture.written")
        job.journal.mark_done(job.key, how)
        step("capture.done")
        if job.recovered:
            self.capture.recovered += 1
            if how == cj.DIGEST:
                self.capture.recovered_as_digest += 1
            try:
                note_recovered(job.journal.path.parent, how)
            except OSError as exc:  # a counter, never worth an entry
                log.info("recovered count not saved: %s", exc)
        if self._closed and not job.journal.pending:
            job.journal.close()  # shutdown left it open while this write was under way

    def _write_digest_now(self, job: _CaptureJob, reason: str) -> None:
        from memlane.engine.journal.capture_journal import DIGEST
        from memlane.engine.journal.distill import digest, failure_marker

        exchange = job.exchange
        if not job.redacted:
            # Only the start of each text makes the digest: redacting megabytes
            # of pasted logs here would overrun the shutdown cap.
            exchange = self._redacted(
                replace(
                    exchange,
                    user=exchange.user[:DIGEST_SOURCE_CHARS],
                    assistant=exchange.assistant[:DIGEST_SOURCE_CHARS],
                )
            )
        self.capture.failed += 1
        self.capture.last_failure = reason
        self._write(job, [failure_marker(reason), *digest(exchange)], DIGEST)

    def note_write(self) -> None:
        """A tool wrote to the store: schedule the debounced index."""
        self.indexer.note_write()

    def note_tool(self, name: str, arguments: dict[str, Any], result_text: str) -> None:
        """One of memlane's tools answered the agent: its text is recalled, not news."""
        self._recall_log.note_tool(name, arguments, result_text)

    # -- shutdown -----------------------------------------------------------------------

    @property
    def pending_captures(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs if not j.done.is_set())

    def shutdown(self, cap_ms: int | None = None) -> Flush:
        """Flush pending captures and settle the indexer, racing the cap."""
        cap_s = (self.settings.shutdown_cap_ms if cap_ms is None else cap_ms) / 1000
        started = time.monotonic()
        with self._lock:
            self._closed = True
            jobs = list(self._jobs)
        capture_deadline = started + cap_s * CAPTURE_SHARE_OF_SHUTDOWN
        for job in jobs:
            job.done.wait(max(0.0, capture_deadline - time.monotonic()))
        for job in jobs:
            if not job.done.is_set() and job.claim():
                # Distillation is still running: the exchange goes in as a
                # digest now rather than being lost with the process.
                self._write_digest_now(job, SHUTDOWN_REASON)
                job.done.set()
        self._capture_queue.put(None)
        self._close_journals(jobs)
        if self._sweeper is not None:
            self._sweeper.stop(timeout=0.5)
        if self._sessions_layer is not None:
            self._sessions_layer.flush(max(0.0, started + cap_s - time.monotonic()) / 2)
            self._sessions_layer.close()
        settled = self.indexer.settle(max(0.0, started + cap_s - time.monotonic()))
        self.indexer.close()
        if self._search_worker is not None:
            self._search_worker.stop()
            self._search_worker = None
        pending = sum(1 for j in jobs if not j.done.is_set())
        return Flush(flushed=settled and pending == 0 and self._unwritten == 0, pending=pending)

    def _close_journals(self, jobs: list[_CaptureJob]) -> None:
        """Release every journal whose jobs are settled (what is pending waits for recovery).

        One with a write still under way stays locked until that write marks
        it (``_settle_journal``): a session starting meanwhile must not
        recover an entry that is being written.
        """
        with self._lock:
            journals = [*self._adopted, *([self._journal] if self._journal else [])]
        # Every job still not done now is one the capture thread is writing.
        busy = {id(j.journal) for j in jobs if not j.done.is_set()}
        for journal in journals:
            if id(journal) not in busy:
                journal.close()

    # -- recovery of what a killed process left -------------------------------------------

    def _recover(self) -> None:
        """Adopt the capture journal of every session that is gone and queue what it left."""
        from memlane.engine.journal.capture_journal import journal_dir
        from memlane.engine.journal.capture_recovery import orphaned
        from memlane.store.redaction import redact

        directory = journal_dir(self.memory.scope)
        store = self.memory.scope.store
        try:
            # agent_settled redacts before it answers: its first call should
            # not also pay for loading the scanner.
            redact("warm-up")
            if not directory.is_dir():
                return
            for journal, left, found in orphaned(directory, store):
                self.capture.found_written += found
                if not left:
                    continue
                jobs = [
                    _CaptureJob(
                        item.exchange(),
                        item.anchor,
                        journal=journal,
                        key=item.key,
                        redacted=True,
                        at=item.at,
                        recovered=True,
                    )
                    for item in left
                ]
                with self._lock:
                    if self._closed:
                        journal.close()  # left as it is for the next session
                        return
                    self._adopted.append(journal)
                    for job in jobs:
                        self._enqueue_locked(job)
                for job in jobs:
                    self._capture_queue.put(job)
                step("capture.recovered")
        except Exception as exc:  # recovery must never stop a session
            log.warning("recovering queued captures failed: %s", exc)
            self.capture.write_errors.append(f"recovery: {type(exc).__name__}: {exc}")
        finally:
            self.capture.recovery_scanned = True
            self._recovery_scanned.set()

    def wait_recovery(self, timeout_s: float) -> bool:
        """Wait until what ended sessions left is written (True) or *timeout_s* passes."""
        deadline = time.monotonic() + timeout_s
        if not self._recovery_scanned.wait(timeout_s):
            return False
        with self._lock:
            jobs = [j for j in self._jobs if j.recovered]
        return all(j.done.wait(max(0.0, deadline - time.monotonic())) for j in jobs)

    # -- status -------------------------------------------------------------------------

    def status(self, *, probe: bool = False) -> Status:
        """memory_status: the doctor's report with this session's live state."""
        report = self.memory.status(probe=probe, host_llm=self.host_llm_available)
        report.session = self.status_json()
        report.capture["llm"] = self.capture.llm
        report.capture["enabled"] = self.capture.enabled
        report.notices.extend(self.notices)
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
            "indexer": self.indexer.state.to_json(),
            "fresh_writes": self.memory.fresh.to_json(),
            "pending_captures": self.pending_captures,
        }
