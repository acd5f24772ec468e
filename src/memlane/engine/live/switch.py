"""The settings a running session follows: the keys declared ``live``
(core/config/keys.py), changed by ``memlane config set``, ``memlane memory
on|off`` or pi's ``/memory on|off`` and ``/memory settings`` while the
session runs.

A session follows them from its next event: the topic switch, auto-context
(on or off, its k, floor, budget and deadline), heuristic auto-recall, and
the search and transcript defaults (those are read from the configuration
at each call, so taking the new value into the memory's configuration is
all they need). Every other setting (models, the index, capture, the
sessions layer's sweep) stays what the session started with: it applies
from the next session. Looking costs a few ``stat`` calls per event; the
files are read again only when one of them changed.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from memlane.core.config.keys import KEYS

if TYPE_CHECKING:
    from memlane.core.config import Config, Value
    from memlane.core.settings import SessionSettings
    from memlane.engine.project import Memory

#: Every key a running session follows, in declaration order.
LIVE_KEYS: tuple[str, ...] = tuple(name for name, key in KEYS.items() if key.live)

#: The fields of a session's own settings (``Session.settings``) that follow
#: their keys: what auto-context reads there.
AUTO_CONTEXT_FIELDS = (
    "auto_context_enabled",
    "auto_context_top_k",
    "auto_context_score_floor",
    "auto_context_char_budget",
    "auto_context_cap_ms",
    "auto_context_query_limit",
)

Stamp = tuple[tuple[int, int] | None, ...]


class SettingsFollower:
    """Watches the configuration files of one memory for changes of the live keys."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._stamp = self._stat()
        # The values this watcher last reported: several sessions of one
        # engine share a memory (and its configuration), so whichever polls
        # first takes the new values in, and each of the others still has to
        # see the change.
        self._seen: dict[str, Value] = {name: memory.config.values[name] for name in LIVE_KEYS}

    def _stat(self) -> Stamp:
        from memlane.core.config.layers import config_sources

        stamps: list[tuple[int, int] | None] = []
        for path in config_sources(self.memory.scope.repository_dir):
            try:
                st = os.stat(path)
            except OSError:
                stamps.append(None)
            else:
                stamps.append((st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def poll(self) -> list[str]:
        """The live keys whose value changed since the last poll.

        The memory's configuration takes the new values: every handle forked
        from it shares that configuration, so the tools, extraction and
        surfacing all see them.
        """
        stamp = self._stat()
        config = self.memory.config
        if stamp != self._stamp:
            self._stamp = stamp
            from memlane.core.config import load_config
            from memlane.core.errors import ConfigError

            try:
                fresh = load_config(self.memory.scope.repository_dir)
            except ConfigError:
                fresh = None  # a file being edited by hand: keep what the session has
            if fresh is not None:
                for name in LIVE_KEYS:
                    config.follow(fresh, name)
        changed = [name for name in LIVE_KEYS if config.values[name] != self._seen[name]]
        for name in changed:
            self._seen[name] = config.values[name]
        return changed


def followed_settings(settings: SessionSettings, config: Config) -> SessionSettings:
    """*settings* with the live auto-context fields as *config* has them now."""
    now = config.session
    return replace(settings, **{field: getattr(now, field) for field in AUTO_CONTEXT_FIELDS})
