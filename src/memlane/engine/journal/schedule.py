"""The session's indexing schedule: one serial queue, debounced, no watcher.

Reference (pi-memsearch "Indexing and serialization"): every index run of a
session goes through one worker, so two never race for the index; writes
schedule a run ``INDEX_DEBOUNCE_MS`` later and a burst of writes costs one
run; a run locked out by another process retries on ``BACKOFF_DELAYS_MS``
before it reports; shutdown settles the queue within a cap. Nothing here
watches the file system: the session owns the schedule.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import IndexReport

log = logging.getLogger("memlane.schedule")


@dataclass
class ScheduleState:
    runs: int = 0
    busy_retries: int = 0
    last_report: IndexReport | None = None
    last_error: str | None = None
    pending: bool = False
    running: bool = False
    errors: list[str] = field(default_factory=list)
    #: An index run compared the whole store with the index (or there was no
    #: store yet): until then a session's search looks for what other tools
    #: wrote itself (engine/journal/catch_up.py's ``outside_writes``).
    caught_up: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "busy_retries": self.busy_retries,
            "pending": self.pending,
            "running": self.running,
            "last_error": self.last_error,
            "last_report": self.last_report.to_json() if self.last_report else None,
        }


class IndexScheduler:
    """A single worker thread that runs ``Memory.sync`` when asked.

    ``memory_factory`` is called once, in the worker thread, because an index
    connection belongs to the thread that opened it.
    """

    def __init__(
        self,
        memory_factory: Callable[[], ProjectMemory],
        *,
        debounce_s: float,
        backoff_delays_s: tuple[float, ...],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._memory_factory = memory_factory
        self._debounce_s = debounce_s
        self._backoff = backoff_delays_s
        self._sleep = sleep
        self._cond = threading.Condition()
        self._due: float | None = None
        self._stop = False
        self._drain = False  # closed, but what is due still runs first
        self._settling = False
        self.state = ScheduleState()
        self._thread = threading.Thread(target=self._run, name="memlane-indexer", daemon=True)
        self._thread.start()

    # -- requests -------------------------------------------------------------

    def run_soon(self) -> None:
        """Index now (the catch-up at session start)."""
        self._schedule(time.monotonic())

    def note_write(self) -> None:
        """A write happened: index ``debounce`` after the last write of a burst.

        While settling (shutdown) there is no later: index at once.
        """
        delay = 0.0 if self._settling else self._debounce_s
        self._schedule(time.monotonic() + delay)

    def _schedule(self, due: float) -> None:
        with self._cond:
            if self._stop and not self._drain:
                return
            if self._stop:
                due = time.monotonic()  # draining: no later
            self._due = due if self._due is None else _merge(self._due, due)
            self.state.pending = True
            self._cond.notify_all()

    def settle(self, timeout_s: float) -> bool:
        """Run anything pending now and wait until idle; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._settling = True  # writes arriving meanwhile index at once
            try:
                if self._due is not None:
                    self._due = time.monotonic()
                    self._cond.notify_all()
                while self._due is not None or self.state.running:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                return True
            finally:
                self._settling = False

    def close(self, timeout_s: float = 0.0, *, drain: bool = False) -> None:
        """Stop taking requests. ``drain``: what is due runs first, at once (no
        debounce), then the worker ends; otherwise only a run already under way
        finishes."""
        with self._cond:
            self._stop = True
            self._drain = drain
            self._cond.notify_all()
        if timeout_s > 0:
            self._thread.join(timeout_s)

    @property
    def working(self) -> bool:
        """A run is under way, or one is due and the worker will do it."""
        with self._cond:
            due = self._due is not None and (not self._stop or self._drain)
            return self._thread.is_alive() and (self.state.running or due)

    # -- worker ---------------------------------------------------------------

    def _run(self) -> None:
        memory: ProjectMemory | None = None
        try:
            while True:
                with self._cond:
                    while not self._stop and (self._due is None or self._due > time.monotonic()):
                        wait = None if self._due is None else self._due - time.monotonic()
                        self._cond.wait(wait)
                    if self._stop and not (self._drain and self._due is not None):
                        return
                    self._due = None
                    self.state.running = True
                    self.state.pending = False
                try:
                    if memory is None:
                        memory = self._memory_factory()
                    self._index_once(memory)
                finally:
                    with self._cond:
                        self.state.running = False
                        self._cond.notify_all()
        finally:
            if memory is not None:
                memory.close()

    def _index_once(self, memory: ProjectMemory) -> None:
        from memlane.index.protocol import IndexBusyError

        delays = list(self._backoff)
        while True:
            try:
                if not memory.scope.store.is_dir():
                    self.state.caught_up = True
                    return  # nothing written yet: nothing to index
                # An idle pass leaves the state file alone, so a doctor never
                # sees "running" for a run that had nothing to do.
                report = memory.sync(operation="index", quiet_when_idle=True)
                self.state.caught_up = True
                self.state.runs += 1
                self.state.last_report = report
                self.state.last_error = None
                return
            except IndexBusyError as exc:
                if not delays:
                    self._failed(f"index busy after {len(self._backoff)} retries: {exc.message}")
                    return
                self.state.busy_retries += 1
                self._sleep(delays.pop(0))
            except MemlaneError as exc:
                self._failed(str(exc))
                return
            except Exception as exc:  # a bug must not kill the session's indexer
                log.exception("index run failed")
                self._failed(f"internal error: {type(exc).__name__}: {exc}")
                return

    def _failed(self, message: str) -> None:
        self.state.last_error = message
        self.state.errors = [*self.state.errors[-9:], message]


def _merge(current: float, new: float) -> float:
    """A later write pushes a debounced run back; an immediate request is
    never delayed by an earlier debounce."""
    now = time.monotonic()
    if new <= now:  # an immediate request wins
        return min(current, new)
    return max(current, new)  # debounce: the last write of a burst decides
