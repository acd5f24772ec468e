"""Capture: a settled exchange on its way into the daily file, exactly once (docs/session.md).

``queue`` logs the gated exchange before the host gets its answer (a
kill from then on loses nothing, engine/journal/capture_log.py); one
background thread then distils it, appends one anchored entry, marks its
capture-log record done and schedules the debounced index, and finally turns
the durable learnings into topic entries. ``flush`` at shutdown writes what
is still distilling as a digest and lets the extractions under way finish
within their own deadline; ``recover`` adopts what killed sessions left in
their capture logs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from memlane.core.faults import step
from memlane.core.types import Anchor, Exchange
from memlane.engine.live.state import CaptureState, ExtractionState, Queued

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.settings import SessionSettings, TopicSettings
    from memlane.engine.journal.capture_log import CaptureLog
    from memlane.engine.journal.schedule import IndexScheduler
    from memlane.engine.project import Memory
    from memlane.engine.shared.earlier import Earlier
    from memlane.llm.base import LLM

log = logging.getLogger("memlane.session")

SHUTDOWN_REASON = "the session ended before distillation finished"
RECOVERY_REASON = (
    "recovered after the session that captured it ended; the LLM had failed another "
    "recovered exchange"
)
# How much of each text a shutdown digest redacts (the digest shows far less).
DIGEST_SOURCE_CHARS = 4000
# Shutdown waits this long past the extraction deadline for the extraction's
# own timeout to be reported.
EXTRACT_JOIN_GRACE_S = 0.5


class CaptureJob:
    """One exchange on its way to the daily file; written exactly once.

    ``capture_log``/``key`` name its capture-log record (None when the log
    could not be written); ``redacted`` says the exchange already is;
    ``recovered`` jobs come from the capture log of a session that is gone and
    are written at the moment that session acknowledged them (``at``).
    """

    def __init__(
        self,
        exchange: Exchange,
        anchor: Anchor,
        *,
        capture_log: CaptureLog | None = None,
        key: str | None = None,
        redacted: bool = False,
        at: datetime | None = None,
        recovered: bool = False,
    ) -> None:
        self.exchange = exchange
        self.anchor = anchor
        self.capture_log = capture_log
        self.key = key
        self.redacted = redacted
        self.at = at
        self.recovered = recovered
        # False when the answer restated recalled memory: those memories are
        # not offered to the LLM as ones it may correct (engine/journal/echo.py).
        self.offer_earlier = True
        self._claimed = threading.Lock()
        self.done = threading.Event()

    def claim(self) -> bool:
        return self._claimed.acquire(blocking=False)


class Capture:
    """One session's capture queue, its thread, and its capture log."""

    def __init__(
        self,
        memory: Memory,
        settings: SessionSettings,
        *,
        session_id: str,
        host: str,
        transcript_path: str | None,
        llm: LLM | None,
        state: CaptureState,
        extraction: ExtractionState,
        indexer: IndexScheduler,
        notices: list[str] | None = None,
    ) -> None:
        self.memory = memory
        # The session's notices: where the spent daily LLM budget is said, once a day.
        self.notices = notices if notices is not None else []
        self._budget_noticed: str | None = None  # the day it was said
        self.settings = settings
        self.topic_settings: TopicSettings = memory.config.topics
        self.session_id = session_id
        self.host = host
        self.transcript_path = transcript_path
        self.llm = llm
        self.extract_llm: LLM | None = llm  # extract_memories.model overrides (Session.open)
        self.state = state
        self.extraction = extraction
        self.indexer = indexer
        self._fork: Memory | None = None  # the capture thread's own index handle
        self._lock = threading.Lock()
        self._closed = False
        self._jobs: list[CaptureJob] = []
        self._own_log: CaptureLog | None = None  # created by the first queued exchange
        self._adopted: list[CaptureLog] = []  # capture logs of ended sessions, being recovered
        self._recovery_scanned = threading.Event()
        self._recovery_llm_failed = False
        self._queue: queue.Queue[CaptureJob | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        # Set by flush: no extraction may run past it (monotonic seconds).
        self._extract_deadline: float | None = None
        # Set from an entry's write until its extraction ends: shutdown waits
        # for an extraction only while one has work (a distillation that
        # shutdown already wrote as a digest leaves nothing to extract).
        self._extracting = threading.Event()
        self.unwritten = 0  # exchanges whose entry could not be written

    @property
    def clock(self) -> Clock:
        return self.memory.clock

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, exchange: Exchange, *, offer_earlier: bool = True) -> Queued:
        """Log a gated exchange and queue it; distillation runs in the background."""
        job = self._new_job(exchange)
        job.offer_earlier = offer_earlier
        with self._lock:
            if self._closed:  # shutdown began after the session's first check
                return Queued(False, "the session has shut down")
            # On disk before the answer: a kill from here on loses nothing.
            unlogged = self._log_locked(job)
            self._enqueue_locked(job)
            self.state.queued += 1
        self._queue.put(job)
        if unlogged:
            return Queued(True, f"queued in memory only ({unlogged})")
        step("capture.journaled")  # the fault point keeps its name (tests kill there)
        return Queued(True)

    def _new_job(self, exchange: Exchange) -> CaptureJob:
        """The job of a gated exchange: its anchor fixed now, redacted when short enough
        to log whole (a longer one is redacted in the background, its head logged)."""
        from memlane.core.types import anchor_field
        from memlane.engine.journal.capture_log import LOG_TEXT_CHARS
        from memlane.engine.project import NO_TRANSCRIPT
        from memlane.store.daily import new_entry_id

        # Fixed before the capture-log record: the turn in the daily file's anchor
        # is how a recovery sees that a killed process had written the entry.
        anchor = Anchor(
            session=exchange.session_id or self.session_id,
            turn=anchor_field(exchange.entry_id or "", spaces=False) or new_entry_id(),
            transcript=exchange.transcript_path or self.transcript_path or NO_TRANSCRIPT,
        )
        short = max(len(exchange.user), len(exchange.assistant)) <= LOG_TEXT_CHARS
        if short:
            exchange = self._redacted(exchange)
        return CaptureJob(exchange, anchor, redacted=short, at=self.clock.now())

    def _log_locked(self, job: CaptureJob) -> str | None:
        """Append *job* to this session's capture log; why not, when it could not be."""
        from memlane.engine.journal import capture_log as cl

        assert job.at is not None
        if job.redacted:
            user, assistant, clipped = job.exchange.user, job.exchange.assistant, False
        else:
            user, user_clipped = cl.log_copy(job.exchange.user)
            assistant, answer_clipped = cl.log_copy(job.exchange.assistant)
            clipped = user_clipped or answer_clipped
        item = cl.Pending(cl.new_key(), job.anchor, job.at, user, assistant, clipped)
        try:
            if self._own_log is None:
                header = {"session": self.session_id, "host": self.host}
                header["opened"] = job.at.isoformat()
                self._own_log = cl.CaptureLog.create(cl.capture_log_dir(self.memory.scope), header)
            self._own_log.append(item)
        except cl.CaptureLogError as exc:
            self.state.unjournaled += 1
            self.state.journal_error = exc.message
            log.warning("%s", exc.message)
            return exc.message
        job.capture_log, job.key = self._own_log, item.key
        return None

    def _enqueue_locked(self, job: CaptureJob) -> None:
        # Only unfinished jobs are kept: a long session settles thousands of
        # exchanges, and each finished one would hold its text for good.
        self._jobs = [j for j in self._jobs if not j.done.is_set()]
        self._jobs.append(job)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memlane-capture", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            captured: Exchange | None = None
            try:
                captured = self._capture(job)
            except Exception as exc:  # never let one exchange stop capture
                log.exception("capture failed")
                self.state.write_errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                # After done: the capture-log record never waits for this; shutdown
                # gives it until its extraction deadline (``flush``).
                wanted = captured is not None and self.extraction.enabled and not job.recovered
                if wanted:
                    self._extracting.set()
                job.done.set()
            if captured is not None and wanted:
                try:
                    self._extract(captured)
                finally:
                    self._extracting.clear()

    def _capture(self, job: CaptureJob) -> Exchange | None:
        """Distil and write one exchange; the redacted exchange when distilled."""
        from memlane.engine.journal.capture_log import DIGEST, DISTILLED
        from memlane.engine.journal.distill import digest, distill, failure_marker

        exchange = job.exchange if job.redacted else self._redacted(job.exchange)
        if job.done.is_set():
            return None
        if job.recovered and self._recovery_llm_failed:
            # The LLM failed a recovered exchange already: the rest go in as
            # digests instead of each waiting out the distillation timeout.
            if job.claim():
                self.state.failed += 1
                self._write(job, [failure_marker(RECOVERY_REASON), *digest(exchange)], DIGEST)
            return None
        result = distill(
            exchange,
            self.llm,
            timeout_s=self.settings.distill_timeout_ms / 1000,
            earlier=self._earlier(exchange) if job.offer_earlier else [],
        )
        step("capture.distilled")
        if not job.claim():
            return None  # shutdown wrote it as a digest meanwhile
        if result.failed:
            self.state.failed += 1
            self.state.last_failure = result.failed
            self._recovery_llm_failed = self._recovery_llm_failed or job.recovered
            if result.budget_reached:
                self._notice_budget(result.failed)
        elif self.llm is not None:
            self.state.distilled += 1
        how = DISTILLED if result.distilled else DIGEST
        self._write(job, result.bullets, how, result.supersedes)
        return None if result.failed else exchange

    def _earlier(self, exchange: Exchange) -> list[Earlier]:
        """What the entry may say it corrects: the memories most like the exchange."""
        from memlane.engine.recall.earlier import earlier_memories

        if self.llm is None:
            return []
        return earlier_memories(self._own(), f"{exchange.user}\n{exchange.assistant}")

    def _own(self) -> Memory:
        """The capture thread's memory: a search opens the index, and an index
        connection belongs to one thread."""
        if self._fork is None:
            self._fork = self.memory.fork()
        return self._fork

    def _notice_budget(self, reason: str) -> None:
        """Say once a day (per session) that entries are digests for want of budget."""
        day = self.clock.today().isoformat()
        if self._budget_noticed == day:
            return
        self._budget_noticed = day
        from memlane.llm.budget import exhausted_notice

        self.notices.append(exhausted_notice(reason))

    def _extract(self, exchange: Exchange) -> None:
        """Durable learnings of a distilled exchange become topic entries."""
        from memlane.engine.topics.extraction import DEADLINE_SLACK_S, extract

        state = self.extraction
        timeout_s = self.settings.distill_timeout_ms / 1000
        if self._extract_deadline is not None:
            # The session is ending: what is left of the shutdown's share,
            # the call's own slack included.
            left = self._extract_deadline - time.monotonic() - DEADLINE_SLACK_S
            timeout_s = min(timeout_s, left)
            if timeout_s <= 0:
                state.abandoned += 1
                return
        report = extract(
            self._own(),
            exchange,
            self.extract_llm,
            settings=self.topic_settings,
            timeout_s=timeout_s,
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
        self.state.redactions += user.count + assistant.count
        return replace(exchange, user=user.text, assistant=assistant.text)

    def _write(
        self, job: CaptureJob, bullets: list[str], how: str, supersedes: tuple[str, ...] = ()
    ) -> None:
        from memlane.core.errors import MemlaneError, NotFoundError

        # A recovered exchange is written at the moment it was acknowledged,
        # into that day's file, as its own session would have written it.
        at = job.at if job.recovered else None
        # The markers are looked up in the index: this thread's handle.
        writer = self._fork if supersedes and self._fork is not None else self.memory
        try:
            try:
                entry = writer.write("\n".join(bullets), job.anchor, now=at, supersedes=supersedes)
            except NotFoundError:  # what it corrects was re-indexed meanwhile: still written
                entry = writer.write("\n".join(bullets), job.anchor, now=at)
        except MemlaneError as exc:
            self.state.write_errors.append(exc.message)
            self.unwritten += 1
            return
        except Exception as exc:  # a bug must not silently drop an exchange
            log.exception("writing a captured exchange failed")
            self.state.write_errors.append(f"{type(exc).__name__}: {exc}")
            self.unwritten += 1
            return
        self.state.written += 1
        self.indexer.note_write()
        self._settle_log(job, entry.path, how)

    def _settle_log(self, job: CaptureJob, path: str, how: str) -> None:
        """The entry is in the daily file: flush it, then its capture-log record is done."""
        from memlane.engine.journal import capture_log as cl
        from memlane.engine.journal.capture_recovery import note_recovered

        if job.capture_log is None or job.key is None:
            return
        try:
            cl.fsync_file(path)
        except OSError as exc:
            # Not marked done: a recovery finds the entry's anchor instead.
            log.warning("cannot flush %s: %s", path, exc)
            return
        step("capture.written")
        job.capture_log.mark_done(job.key, how)
        step("capture.done")
        if job.recovered:
            self.state.recovered += 1
            if how == cl.DIGEST:
                self.state.recovered_as_digest += 1
            try:
                note_recovered(job.capture_log.path.parent, how)
            except OSError as exc:  # a counter, never worth an entry
                log.info("recovered count not saved: %s", exc)
        if self._closed and not job.capture_log.pending:
            job.capture_log.close()  # shutdown left it open while this write was under way

    def _write_digest_now(self, job: CaptureJob, reason: str) -> None:
        from memlane.engine.journal.capture_log import DIGEST
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
        self.state.failed += 1
        self.state.last_failure = reason
        self._write(job, [failure_marker(reason), *digest(exchange)], DIGEST)

    @property
    def pending_captures(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs if not j.done.is_set())

    def flush(self, deadline: float, extract_deadline: float | None = None) -> list[CaptureJob]:
        """Stop taking exchanges; what is still distilling at *deadline* (monotonic)
        goes in as a digest; the extractions of the exchanges distilled by then
        run until *extract_deadline* (default *deadline*), the one under way then
        is abandoned. The jobs that were pending, for the caller's count."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs)
            thread = self._thread
        self._extract_deadline = deadline if extract_deadline is None else extract_deadline
        for job in jobs:
            job.done.wait(max(0.0, deadline - time.monotonic()))
        for job in jobs:
            if not job.done.is_set() and job.claim():
                # Distillation is still running: the exchange goes in as a
                # digest now rather than being lost with the process.
                self._write_digest_now(job, SHUTDOWN_REASON)
                job.done.set()
        self._queue.put(None)
        self._close_logs(jobs)
        if thread is not None and self._extracting.is_set():
            # Extraction runs after each entry is written: what a one-shot
            # process (``pi -p``) distilled just before its end is extracted too.
            left = self._extract_deadline - time.monotonic()
            thread.join(max(0.0, left) + EXTRACT_JOIN_GRACE_S)
            if thread.is_alive():
                self.extraction.abandoned += 1
                log.info("an extraction was still running when the session ended")
        return jobs

    def _close_logs(self, jobs: list[CaptureJob]) -> None:
        """Release every capture log whose jobs are settled (what is pending waits for recovery).

        One with a write still under way stays locked until that write marks
        it (``_settle_log``): a session starting meanwhile must not
        recover an entry that is being written.
        """
        with self._lock:
            logs = [*self._adopted, *([self._own_log] if self._own_log else [])]
        # Every job still not done now is one the capture thread is writing.
        busy = {id(j.capture_log) for j in jobs if not j.done.is_set()}
        for capture_log in logs:
            if id(capture_log) not in busy:
                capture_log.close()

    # -- recovery of what a killed process left -------------------------------------------

    def recover(self) -> None:
        """Adopt the capture log of every session that is gone and queue what it left."""
        from memlane.engine.journal.capture_log import capture_log_dir
        from memlane.engine.journal.capture_recovery import orphaned
        from memlane.store.redaction import redact

        directory = capture_log_dir(self.memory.scope)
        store = self.memory.scope.store
        try:
            # agent_settled redacts before it answers: its first call should
            # not also pay for loading the scanner.
            redact("warm-up")
            if not directory.is_dir():
                return
            for capture_log, left, found in orphaned(directory, store):
                self.state.found_written += found
                if not left:
                    continue
                jobs = [
                    CaptureJob(
                        item.exchange(),
                        item.anchor,
                        capture_log=capture_log,
                        key=item.key,
                        redacted=True,
                        at=item.at,
                        recovered=True,
                    )
                    for item in left
                ]
                with self._lock:
                    if self._closed:
                        capture_log.close()  # left as it is for the next session
                        return
                    self._adopted.append(capture_log)
                    for job in jobs:
                        self._enqueue_locked(job)
                for job in jobs:
                    self._queue.put(job)
                step("capture.recovered")
        except Exception as exc:  # recovery must never stop a session
            log.warning("recovering queued captures failed: %s", exc)
            self.state.write_errors.append(f"recovery: {type(exc).__name__}: {exc}")
        finally:
            self.state.recovery_scanned = True
            self._recovery_scanned.set()

    def wait_recovery(self, timeout_s: float) -> bool:
        """Wait until what ended sessions left is written (True) or *timeout_s* passes."""
        deadline = time.monotonic() + timeout_s
        if not self._recovery_scanned.wait(timeout_s):
            return False
        with self._lock:
            jobs = [j for j in self._jobs if j.recovered]
        return all(j.done.wait(max(0.0, deadline - time.monotonic())) for j in jobs)
