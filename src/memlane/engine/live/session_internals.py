"""``Session.internals``: what memlane's own hosts and tools use of a session beyond its API.

The warm server starts a session's background work after answering its host,
waits on its captures and index work before exiting, the tools schedule the
debounced index after a write and follow the live settings, and the tests
wait for the workers to be warm. None of that is for a program embedding
memlane (docs/python-api.md lists the API): it is grouped here, as a view
over the session's workers, and may change between versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlane.engine.journal.schedule import IndexScheduler
    from memlane.engine.live.auto_context import AutoContext
    from memlane.engine.live.background import Background
    from memlane.engine.live.capture import Capture
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.topics.surfacing import TopicSurfacer
    from memlane.llm.base import LLM


class SessionInternals:
    """A view over one session's workers, made on each access of ``Session.internals``."""

    def __init__(
        self,
        *,
        captures: Capture,
        auto: AutoContext,
        indexer: IndexScheduler,
        background: Background | None,
        background_started: Callable[[], bool],
        start_background: Callable[[], None],
        follow_settings: Callable[[], None],
    ) -> None:
        self._captures = captures
        self._auto = auto
        self._background = background
        self._background_started = background_started
        #: The debounced index scheduler (engine/journal/schedule.py).
        self.indexer = indexer
        #: Once, and not after shutdown: the catch-up index, what killed sessions
        #: left in their capture logs and the warm auto-context worker (for a
        #: host that opened the session with ``defer_background``).
        self.start_background = start_background
        #: Follow the live settings changed while the session runs (engine/live/switch.py).
        self.follow_settings = follow_settings

    def note_write(self) -> None:
        """A tool wrote to the store: schedule the debounced index."""
        self.indexer.note_write()

    def wait_auto_context_ready(self, timeout_s: float) -> bool:
        """Start the auto-context worker if needed and wait until it is warm."""
        return self._auto.wait_ready(timeout_s)

    def wait_recovery(self, timeout_s: float) -> bool:
        """Wait until what ended sessions left is written (True) or *timeout_s* passes."""
        return self._captures.wait_recovery(timeout_s)

    @property
    def pending_captures(self) -> int:
        """Captures queued and not yet written."""
        return self._captures.pending_captures

    @property
    def working(self) -> bool:
        """Index work (a run under way or due, a drain after shutdown) or the
        background start (warm-up, sessions catch-up) is still running."""
        background = self._background
        return self.indexer.working or (background is not None and background.working)

    @property
    def sessions_catching_up(self) -> bool:
        """The sweep of past sessions its start asks for is not done, or not asked
        for yet (as for the notes while ``indexer.state.caught_up`` is False): a
        search reads what is new itself."""
        background = self._background
        return background is not None and (not self._background_started() or background.catching_up)

    @property
    def sessions_layer(self) -> SessionsLayer | None:
        """The project's sessions layer once the background start opened it (its
        backfill may still run); None before, when off, or when it could not open."""
        return self._background.sessions_layer if self._background is not None else None

    @property
    def surfacer(self) -> TopicSurfacer | None:
        """The topic surfacer, None while topic surfacing is off."""
        return self._auto.surfacer

    @property
    def extract_llm(self) -> LLM | None:
        """The LLM that turns distilled exchanges into topic entries (extract_memories.model)."""
        return self._captures.extract_llm

    @extract_llm.setter
    def extract_llm(self, llm: LLM | None) -> None:
        self._captures.extract_llm = llm
