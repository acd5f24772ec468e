"""The warm worker that answers per-prompt searches for a session (ADR 0007).

It owns an index connection of its own (a connection belongs to the thread
that opened it) and warms the model, the index and the vector matrix before
a prompt may count a missed deadline against it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.engine.project import Memory


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

    def _run(self) -> None:
        try:
            while True:
                item = self._requests.get()
                if item is None:
                    return
                work, reply = item
                try:
                    reply.put(("ok", work(self._memory)))
                except Exception as exc:
                    reply.put(("error", exc))
        finally:
            self._memory.close()


def _warm_up(memory: Memory) -> None:
    memory.search("memlane warm-up", 1, sync=False)


def lexical_warm_up(memory: Memory) -> None:
    """Open the index and its full-text tables; never touches the model."""
    memory.search("memlane warm-up", 1, mode="lexical", sync=False)
