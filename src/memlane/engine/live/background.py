"""The engine's own background work, started the same way behind every host.

Whatever drives the engine (pi's sidecar through a ``Session``, the MCP
server without one, a Claude Code host next), the same two things run behind
it once the memory is open, so no host carries this rule itself:

* the embedding model warms up (``Memory.embedding.warm``) while the agent is
  still thinking: the first search then does not pay for the load, and a
  model that cannot load is found and cached as such before anyone waits;
* the sessions layer catches up with the project's transcripts (backfill),
  then the sweeper keeps it current, backing off while idle;
* the warm auto-context workers of ended sessions wait for the next ones
  (``workers``, engine/live/worker.py ``WarmWorkers``); ``stop`` stops them.

Both run on daemon threads, so opening never waits for them; the sessions
layer is an extra, so its failure is a notice, never an error.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from memlane.engine.live.worker import WarmWorkers

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.sessions.sweep import Sweeper

log = logging.getLogger("memlane.background")


class Background:
    """The warm-up and the sessions catch-up and sweep of one open ``Memory``."""

    def __init__(self, memory: Memory, notices: list[str] | None = None) -> None:
        """``notices``: where to say why the sessions layer is unavailable (a
        session passes its own, so memory_status shows it)."""
        self.memory = memory
        self.notices = notices if notices is not None else []
        self._layer: SessionsLayer | None = None
        self._sweeper: Sweeper | None = None
        self._lock = threading.Lock()  # stop must see the sweeper, or it must not start
        self._stopped = False
        self._threads: list[threading.Thread] = []
        self._sessions_start: threading.Thread | None = None
        self.workers = WarmWorkers()

    @property
    def sessions_layer(self) -> SessionsLayer | None:
        """The sessions layer once its thread opened it (its backfill may still run)."""
        return self._layer

    def start(self) -> Background:
        """Start what the configuration asks for; returns at once."""
        if self.memory.config.embedding.provider != "none":
            # The embedder is shared across threads behind its own lock: a
            # search that comes first simply waits for it.
            self._threads.append(
                threading.Thread(
                    target=self.memory.embedding.warm, name="memlane-embedder-warmup", daemon=True
                )
            )
        if self.memory.config.sessions.enabled:
            self._sessions_start = threading.Thread(
                target=self._run_sessions_layer, name="memlane-sessions-start", daemon=True
            )
            self._threads.append(self._sessions_start)
        for thread in self._threads:
            thread.start()
        return self

    @property
    def working(self) -> bool:
        """The warm-up or the sessions catch-up is still running (not the sweeper,
        which runs for as long as the session)."""
        return any(thread.is_alive() for thread in self._threads)

    def wake(self) -> None:
        """A session starts: sweep for what other agents wrote now, not at the
        sweeper's next tick (minutes away while the project was idle)."""
        with self._lock:
            sweeper = self._sweeper
        if sweeper is not None:
            sweeper.wake()

    @property
    def catching_up(self) -> bool:
        """The sessions layer's first backfill, or a sweep a session asked for
        (``wake``), is still under way: a search reads new transcripts itself
        first (engine/sessions/catch_up.py)."""
        start = self._sessions_start
        sweeper = self._sweeper
        return (start is not None and start.is_alive()) or (sweeper is not None and sweeper.woken)

    def stop(self, timeout_s: float = 0.5) -> None:
        """Stop the sweeper; a catch-up still running starts none after this.

        The sessions layer itself stays open: its owner flushes and closes it.
        """
        with self._lock:
            self._stopped = True
            sweeper = self._sweeper
        self.workers.close()
        if sweeper is not None:
            sweeper.stop(timeout=timeout_s)

    def _run_sessions_layer(self) -> None:
        """Catch up with the project's transcripts, then sweep for new ones."""
        from memlane.engine.sessions.layer import SessionsLayer

        try:
            layer = SessionsLayer(self.memory)
            self._layer = layer
            layer.backfill()
            with self._lock:
                if not self._stopped:
                    sweeper = layer.sweeper()
                    sweeper.start()
                    self._sweeper = sweeper
        except Exception as exc:  # the sessions layer is an extra, never fatal
            log.warning("sessions layer unavailable: %s", exc)
            self.notices.append(f"sessions layer unavailable: {exc}")


def start_background(memory: Memory, notices: list[str] | None = None) -> Background:
    """Warm the embedder and keep the sessions layer current, in the background."""
    return Background(memory, notices).start()
