"""``Viewer``: one project's memory as the viewer's pages use it (one per server)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.hosts.web.security import Secrets

if TYPE_CHECKING:
    from memlane.engine.live.background import Background
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.timeline import SessionEntries, Timeline
    from memlane.engine.tools.dispatch import Tools
    from memlane.index.session_docs import SessionInfo


@dataclass
class Viewer:
    """The memory, the tools' dispatch over it, its timeline and sessions layer, the keys."""

    memory: Memory
    keys: Secrets = field(default_factory=Secrets)
    _tools: Tools | None = field(default=None, init=False, repr=False)
    _timeline: Timeline | None = field(default=None, init=False, repr=False)
    _sessions: SessionsLayer | None = field(default=None, init=False, repr=False)
    _background: Background | None = field(default=None, init=False, repr=False)
    _recent: dict[tuple[int, int], list[SessionInfo]] = field(
        default_factory=dict, init=False, repr=False
    )
    _recent_stamp: tuple[int, ...] = field(default=(), init=False, repr=False)
    _session_entries: SessionEntries | None = field(default=None, init=False, repr=False)

    @property
    def tools(self) -> Tools:
        if self._tools is None:
            from memlane.engine.tools.dispatch import Tools

            # Held to the project's own sessions and anchors, as an agent is:
            # a page's links carry transcript paths a request could change.
            self._tools = Tools(self.memory)
        return self._tools

    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            from memlane.engine.timeline import Timeline

            self._timeline = Timeline(self.memory)
        return self._timeline

    @property
    def sessions(self) -> SessionsLayer:
        """The sessions layer the pages read (lexical: a page never loads the model).

        Pages only read it: the index is kept current by ``start``, as the
        MCP server keeps it, never by a page view.
        """
        if self._sessions is None:
            from memlane.engine.sessions.layer import SessionsLayer

            self._sessions = SessionsLayer(self.memory, embedder=None)
        return self._sessions

    @property
    def session_entries(self) -> SessionEntries:
        """The journal entries each session produced (by their anchors)."""
        if self._session_entries is None:
            from memlane.engine.timeline import SessionEntries

            self._session_entries = SessionEntries(self.memory)
        return self._session_entries

    def recent_sessions(self, n: int, offset: int = 0) -> list[SessionInfo]:
        """The sessions layer's ``recent``, read again only when the sessions
        index changed (a grouping of every message: ~80 ms at 90,000)."""
        from memlane.engine.sessions.registry import sessions_stamp

        stamp = sessions_stamp(self.memory)
        if stamp != self._recent_stamp:
            self._recent, self._recent_stamp = {}, stamp
        key = (n, offset)
        if key not in self._recent:
            self._recent[key] = self.sessions.recent(n, offset=offset)
        return self._recent[key]

    def catch_up(self) -> None:
        """Index the project's new session messages now, without vectors
        (``memlane sessions backfill``'s entry point): the tests and the
        benchmark call it to start from a caught-up index."""
        self.sessions.backfill()

    def start(self) -> None:
        """Once, when the server starts: the engine's Background (the MCP
        server's) catches the sessions index up, embeds the new messages and
        then sweeps for more, on its own threads. The pages meanwhile show
        what is indexed so far; a big history is not waited for."""
        from memlane.engine.live.background import start_background

        self._background = start_background(self.memory)

    def close(self) -> None:
        if self._background is not None:
            self._background.stop()
            if self._background.sessions_layer is not None:
                self._background.sessions_layer.close()
        if self._sessions is not None:
            self._sessions.close()
        self.memory.close()
