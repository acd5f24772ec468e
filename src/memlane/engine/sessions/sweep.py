"""The sweep path: transcripts other sessions and agents wrote, picked up on a timer."""

from __future__ import annotations

import contextlib
import os
import threading

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.settings import SessionsSettings
from memlane.core.trace import trace
from memlane.engine.sessions.docs import utc_iso
from memlane.engine.sessions.ingest import BackfillReport, SessionIngestor

# Sweeper status rows in the store's meta table (``memlane sessions status``).
META_SWEEP_CYCLES = "sweep.cycles"
META_SWEEP_BUSY = "sweep.busy"
META_SWEEP_LAST_ERROR = "sweep.last_error"
META_SWEEP_INTERVAL_MS = "sweep.interval_ms"
META_SWEEP_LAST_AT = "sweep.last_at"
META_SWEEP_LAST_ADDED = "sweep.last_added"
META_SWEEP_PID = "sweep.pid"


class Sweeper:
    """Picks up transcripts written by other sessions and agents.

    ``tick()`` runs one sweep; ``start()`` runs it on a thread every
    ``interval_ms``: the base interval after activity, doubled after each
    idle sweep up to the cap. Status goes to the store's meta rows so any
    process (``memlane sessions status``) can read it.
    """

    def __init__(
        self,
        ingestor: SessionIngestor,
        settings: SessionsSettings,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.ingestor = ingestor
        self.base_ms = max(1, settings.sweep_interval_ms)
        self.max_ms = max(self.base_ms, settings.sweep_max_interval_ms)
        self.interval_ms = self.base_ms
        self.clock = clock
        self.cycles = 0
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # a tick now (stop sets it too)
        #: A session started and asked for a sweep that has not finished yet.
        self.woken = False
        self._threads_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _status(self, busy: bool) -> None:
        with contextlib.suppress(Exception):
            self.ingestor.store.set_meta(
                {
                    META_SWEEP_CYCLES: self.cycles,
                    META_SWEEP_BUSY: 1 if busy else 0,
                    META_SWEEP_LAST_ERROR: self.last_error,
                    META_SWEEP_INTERVAL_MS: self.interval_ms,
                    META_SWEEP_LAST_AT: utc_iso(self.clock.timestamp()),
                    META_SWEEP_PID: os.getpid(),
                }
            )

    def tick(self) -> BackfillReport | None:
        """One sweep; returns its report (None when it failed)."""
        self._status(busy=True)
        trace("sweep", "tick.start", cycle=self.cycles + 1, interval_ms=self.interval_ms)
        report: BackfillReport | None = None
        try:
            report = self.ingestor.ingest(operation="sweep")
            self.last_error = None
        except Exception as exc:  # a failed sweep is retried on the next tick
            self.last_error = f"{type(exc).__name__}: {exc}"
            trace("sweep", "tick.error", error=self.last_error)
        self.cycles += 1
        if report is not None and report.activity:
            self.interval_ms = self.base_ms
        else:
            self.interval_ms = min(self.interval_ms * 2, self.max_ms)
        self._status(busy=False)
        trace(
            "sweep",
            "tick.done",
            cycle=self.cycles,
            added=report.documents_added if report else None,
            next_ms=self.interval_ms,
        )
        return report

    def start(self) -> threading.Thread:
        # Under the lock: a stop() from another thread sees either no thread
        # or a started one, never one it cannot join yet.
        with self._threads_lock:
            if self._thread is not None and self._thread.is_alive():
                return self._thread
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._loop, name="memlane-sessions-sweep", daemon=True
            )
            self._thread.start()
            return self._thread

    def wake(self) -> None:
        """Sweep now, not at the next tick (minutes away while the project
        was idle): a session starts, and what other agents wrote since the
        last sweep should be searchable."""
        with self._threads_lock:
            if self._thread is None or not self._thread.is_alive():
                return  # not sweeping (stopped, or not started yet)
            self.woken = True
            self.interval_ms = self.base_ms
            self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval_ms / 1000)
            if self._stop.is_set():
                return
            woken = self._wake.is_set()
            self._wake.clear()
            self.tick()
            if woken and not self._wake.is_set():  # woken again meanwhile: one more
                self.woken = False

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self.woken = False  # no sweep is coming: nobody should wait for one
        with self._threads_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
