"""What a long-lived host process keeps between calls: its current project and session.

A host that serves one agent process (the pi sidecar; any host that stays
up across sessions) starts sessions one after another, maybe in another
project each time. The rules of that are the engine's, the same for every
such host:

- a new session ends the previous one first (its captures are written);
- a session in another directory opens that project's memory *before*
  closing the previous one — and if it cannot be opened, the previous one
  is closed anyway, so nothing keeps writing into a project the host has
  left, and later calls fail the same clear way until it can be opened;
- when the host goes away without ending its session, the captures still
  get written, within ``END_OF_INPUT_FLUSH_CAP_MS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.engine.live.state import Flush
    from memlane.engine.project import Memory
    from memlane.llm.host import HostCall

#: The host closed its input without ending its session: how long the
#: pending captures may take to be written before the process exits.
END_OF_INPUT_FLUSH_CAP_MS = 10_000


class SessionSlot:
    """The current project (``memory``) and session of one host process."""

    def __init__(self, directory: Path, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.directory = directory
        self.clock = clock
        self.memory: Memory | None = None
        self.session: Session | None = None

    def open_memory(self) -> Memory:
        """The current project's memory, opened on first use (a tool call before any session)."""
        from memlane.engine.project import Memory

        if self.memory is None:
            self.memory = Memory.open(self.directory, clock=self.clock)
        return self.memory

    def start(
        self,
        cwd: str | None,
        *,
        session_id: str,
        transcript_path: str | None,
        host: str,
        host_call: HostCall | None = None,
    ) -> Session:
        """End the current session, switch project if *cwd* is another, start a session."""
        from memlane.engine.live.session import Session

        if self.session is not None:
            self.session.shutdown()
            self.session = None
        directory = Path(cwd) if cwd else self.directory
        if self.memory is None or directory.resolve() != self.directory.resolve():
            self._switch_to(directory)
        assert self.memory is not None
        self.session = Session.open(
            self.memory,
            host=host,
            session_id=session_id,
            transcript_path=transcript_path,
            host_call=host_call,
        )
        return self.session

    def _switch_to(self, directory: Path) -> None:
        from memlane.engine.project import Memory

        # Open first: if the new project cannot be opened, nothing may keep
        # writing into the previous one.
        try:
            opened = Memory.open(directory, clock=self.clock)
        except BaseException:
            if self.memory is not None:
                self.memory.close()
            self.directory = directory
            self.memory = None
            raise
        if self.memory is not None:
            self.memory.close()
        self.directory = directory
        self.memory = opened

    def end(self, cap_ms: int | None = None) -> Flush | None:
        """End the current session (None when there is none)."""
        if self.session is None:
            return None
        flush = self.session.shutdown(cap_ms=cap_ms)
        self.session = None
        return flush

    def close(self) -> Flush | None:
        """The host is gone: write what is pending (within the cap) and close the memory."""
        flush = self.end(cap_ms=END_OF_INPUT_FLUSH_CAP_MS)
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        return flush
