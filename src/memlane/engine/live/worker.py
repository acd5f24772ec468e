"""The warm worker that answers per-prompt searches for a session (ADR 0007).

It owns an index connection of its own (a connection belongs to the thread
that opened it) and warms the model, the index and the vector matrix before
a prompt may count a missed deadline against it.

``WarmWorkers`` keeps the workers of a project's ended sessions for its next
ones (the warm engine): a short-lived agent session (one ``codex exec``)
would otherwise pay a connection, a warm-up search and the topic cards'
embeddings for a single prompt, on the cores the agent is starting on.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.core.config import Config
    from memlane.engine.project import Memory

#: Idle warm workers a project keeps (two agents of one project start at once).
IDLE_WORKERS = 2
#: An idle worker is stopped past this (its connection and vector matrix freed).
IDLE_S = 600.0


class SearchWorker:
    """A thread with its own index handle that answers auto-context queries.

    A query that misses the deadline keeps running here while the prompt
    goes on; a worker that misses too often is abandoned (the in-process
    form of killing an unhealthy sidecar) and a fresh one is started lazily.
    """

    def __init__(
        self,
        memory: Memory,
        warm_ups: tuple[Callable[[Memory], Any], ...] = (),
        *,
        first: Callable[[Memory], Any] | None = None,
    ) -> None:
        """``first``: the warm-up before *warm_ups* (default: a hybrid search,
        which loads the model, opens the index and reads the vector matrix)."""
        self._memory = memory
        self._requests: queue.Queue[tuple[Callable[[Memory], Any], queue.Queue[Any]] | None] = (
            queue.Queue()
        )
        self._busy = False  # a request is running (set and read under the GIL)
        # Set once the first search (model, index file, vector matrix) is done:
        # until then a prompt would wait for loading, not for a search.
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memlane-autocontext", daemon=True)
        self._thread.start()
        warming = [first or _warm_up, *warm_ups]
        remaining = [len(warming)]

        def warm(step: Callable[[Memory], Any]) -> Callable[[Memory], Any]:
            def run(memory: Memory) -> Any:
                try:
                    return step(memory)
                finally:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        self.ready.set()

            return run

        for step in warming:
            self.submit(warm(step))

    def submit(self, work: Callable[[Memory], Any]) -> queue.Queue[Any]:
        reply: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._requests.put((work, reply))
        return reply

    def stop(self) -> None:
        self._requests.put(None)

    @property
    def config(self) -> Config:
        """The configuration its memory handle was opened with."""
        return self._memory.config

    @property
    def idle(self) -> bool:
        """Warm, running, and with nothing queued or running: fit for another session."""
        return (
            self.ready.is_set()
            and self._thread.is_alive()
            and not self._busy
            and self._requests.empty()
        )

    def _run(self) -> None:
        try:
            while True:
                item = self._requests.get()
                if item is None:
                    return
                work, reply = item
                self._busy = True
                try:
                    reply.put(("ok", work(self._memory)))
                except Exception as exc:
                    reply.put(("error", exc))
                finally:
                    self._busy = False
        finally:
            self._memory.close()


def _warm_up(memory: Memory) -> None:
    memory.search("memlane warm-up", 1, sync=False)


def lexical_warm_up(memory: Memory) -> None:
    """Open the index and its full-text tables; never touches the model."""
    memory.search("memlane warm-up", 1, mode="lexical", sync=False)


#: What a session hands on with its worker: its topic surfacer's cards
#: (``TopicSurfacer.cards_state``), or None without one.
SurfacerState = Any


class WarmWorkers:
    """The idle warm workers of one project's ended sessions, for its next sessions.

    A session gives its worker back when it ends (``give``); the next session
    takes the most recent one (``take``) instead of starting a worker, so its
    first prompt is searched warm and nothing is loaded again. Only an idle,
    healthy worker opened with the configuration still in force is kept or
    handed out; one idle for ``IDLE_S`` is stopped (by a timer, one at a time,
    while any is kept). ``close`` (the project closes) stops them all and keeps
    none after.
    """

    def __init__(
        self,
        capacity: int = IDLE_WORKERS,
        idle_s: float = IDLE_S,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.idle_s = idle_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._idle: list[tuple[float, SearchWorker, SurfacerState]] = []
        self._closed = False
        self._timer: threading.Timer | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def take(self, config: Config) -> tuple[SearchWorker, SurfacerState] | None:
        """The most recently given worker fit for *config*, and its surfacer's cards."""
        taken: tuple[SearchWorker, SurfacerState] | None = None
        with self._lock:
            keep, stale = self._sorted_out(lambda worker: worker.config == config)
            if keep:
                _, worker, state = keep.pop()
                taken = (worker, state)
            self._idle = keep
        for worker in stale:
            worker.stop()
        return taken

    def expire(self) -> None:
        """Stop the workers idle past ``idle_s``; a timer calls this while any is kept."""
        with self._lock:
            self._timer = None
            self._idle, stale = self._sorted_out(lambda worker: True)
        for worker in stale:
            worker.stop()
        self._schedule_expiry()

    def _schedule_expiry(self) -> None:
        """One timer at a time, due a little after the oldest kept worker expires."""
        with self._lock:
            if self._timer is not None or not self._idle or self._closed:
                return
            due = self._idle[0][0] + self.idle_s - self._monotonic() + 1
            self._timer = threading.Timer(max(due, 1.0), self.expire)
            self._timer.daemon = True
            self._timer.start()

    def _sorted_out(
        self, fits: Callable[[SearchWorker], bool]
    ) -> tuple[list[tuple[float, SearchWorker, SurfacerState]], list[SearchWorker]]:
        """(the entries still fit to hand out, the workers to stop); under the lock."""
        now = self._monotonic()
        keep: list[tuple[float, SearchWorker, SurfacerState]] = []
        stale: list[SearchWorker] = []
        for since, worker, state in self._idle:
            if now - since > self.idle_s or not worker.idle or not fits(worker):
                stale.append(worker)
            else:
                keep.append((since, worker, state))
        return keep, stale

    def give(self, worker: SearchWorker, config: Config, state: SurfacerState = None) -> bool:
        """Keep *worker* for the next session; False (the caller stops it) when it is
        not idle, was opened with another configuration, or the project closed."""
        if not worker.idle or worker.config != config:
            return False
        dropped: list[SearchWorker] = []
        with self._lock:
            if self._closed:
                return False
            self._idle.append((self._monotonic(), worker, state))
            while len(self._idle) > self.capacity:
                dropped.append(self._idle.pop(0)[1])
        for old in dropped:
            old.stop()
        self._schedule_expiry()
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for _, worker, _ in idle:
            worker.stop()
