"""The topic switch of a running session: ``memlane memory on|off`` (pi's
``/memory on|off``) writes ``topics.enabled`` into the global configuration
file, and a session that is running follows it from its next event.

Only this one key is followed: the rest of a session's configuration
(models, limits, deadlines) stays what it started with. Looking costs two
``stat`` calls per event; the files are read again only when one of them
changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlane.engine.project import Memory

KEY = "topics.enabled"

Stamp = tuple[tuple[int, int] | None, ...]


class TopicSwitch:
    """Watches the configuration files of one memory for a change of ``topics.enabled``."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._stamp = self._stat()
        # The value this watcher last reported: several sessions of one
        # engine share a memory (and its configuration), so whichever polls
        # first updates it, and each of the others still has to see the change.
        self._enabled = bool(memory.config.get(KEY))

    def _paths(self) -> list[Path]:
        from memlane.core.paths import global_config_path

        paths = [global_config_path()]
        if self.memory.config.project_file is not None:
            paths.append(self.memory.config.project_file)
        return paths

    def _stat(self) -> Stamp:
        stamps: list[tuple[int, int] | None] = []
        for path in self._paths():
            try:
                st = os.stat(path)
            except OSError:
                stamps.append(None)
            else:
                stamps.append((st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def poll(self) -> bool | None:
        """The new value of ``topics.enabled`` when a file changed it, else None.

        The memory's configuration takes the new value: every handle forked
        from it shares that configuration, so the topic tools, extraction
        and surfacing all see it.
        """
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            from memlane.core.config import load_config
            from memlane.core.errors import ConfigError

            try:
                fresh = load_config(self.memory.scope.repository_dir)
            except ConfigError:
                fresh = None  # a file being edited by hand: keep what the session has
            if fresh is not None:
                self.memory.config.follow(fresh, KEY)
        enabled = bool(self.memory.config.get(KEY))
        if enabled == self._enabled:
            return None
        self._enabled = enabled
        return enabled
