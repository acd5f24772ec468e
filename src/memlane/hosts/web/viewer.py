"""``Viewer``: one project's memory as the viewer's pages use it (one per server)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.hosts.web.security import Secrets

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.engine.timeline import Timeline
    from memlane.engine.tools.dispatch import Tools


@dataclass
class Viewer:
    """The memory, the tools' dispatch over it, its timeline and sessions layer, the keys."""

    memory: Memory
    keys: Secrets = field(default_factory=Secrets)
    _tools: Tools | None = field(default=None, init=False, repr=False)
    _timeline: Timeline | None = field(default=None, init=False, repr=False)
    _layers: dict[bool, SessionsLayer] = field(default_factory=dict, init=False, repr=False)

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

    def catch_up_sessions(self, *, embed: bool = False) -> SessionsLayer:
        """The sessions layer with new messages indexed first (as `memlane search` does).

        ``embed``: embed them too, before a session search. Pages that only
        count or list messages index them without vectors (fast, no model
        load); the next embedding pass gives those rows their vectors.
        """
        layer = self._layers.get(embed)
        if layer is None:
            from memlane.engine.sessions.layer import SessionsLayer

            layer = (
                SessionsLayer(self.memory) if embed else SessionsLayer(self.memory, embedder=None)
            )
            self._layers[embed] = layer
        layer.backfill()
        return layer

    def close(self) -> None:
        for layer in self._layers.values():
            layer.close()
        self.memory.close()
