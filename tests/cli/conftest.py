"""The in-process ``cli`` of these tests checks that a command cleans up after itself.

In a real process an exit hides what a command leaves behind; in-process it
would pile up (and a thread still running when ``main`` returns is work a real
process could cut short). So every call of this directory's ``cli`` fails the
test when the command left a thread running or a file descriptor open.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import Cli, CliResult, FixedClock


def _open_fds() -> dict[int, str]:
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir itself used, gone by now
            continue
    return found


# Descriptors native libraries open for their thread pools and wake-ups, and
# how long they may take to close them after a command returns.
_NATIVE = ("anon_inode:[eventfd]", "anon_inode:[eventpoll]", "socket:")
NATIVE_CLOSE_GRACE_S = 2.0


class CleanCli(Cli):
    """``Cli`` that asserts each command left no thread and no open file behind."""

    def __call__(self, *args: str, **options: Any) -> CliResult:
        threads = set(threading.enumerate())
        fds = _open_fds() if os.path.isdir("/proc/self/fd") else None
        result = super().__call__(*args, **options)
        left = [t.name for t in threading.enumerate() if t not in threads]
        assert not left, f"memlane {' '.join(args)} left threads running: {left}"
        if fds is not None:
            opened = self._opened_since(fds)
            assert not opened, f"memlane {' '.join(args)} left files open: {opened}"
        return result

    @staticmethod
    def _opened_since(before: dict[int, str]) -> dict[int, str]:
        """Descriptors open now that were not before. Event descriptors and
        sockets alone (seen on a loaded machine: two eventfds and a socket,
        from a native library's threads) get a short grace to be closed;
        anything else, or what is still open after it, is a leak."""
        deadline = time.monotonic() + NATIVE_CLOSE_GRACE_S
        while True:
            opened = {fd: t for fd, t in _open_fds().items() if before.get(fd) != t}
            lingering = all(target.startswith(_NATIVE) for target in opened.values())
            if not opened or not lingering or time.monotonic() >= deadline:
                return opened
            time.sleep(0.05)


@pytest.fixture
def cli(project: Path, clock: FixedClock) -> CleanCli:
    return CleanCli(clock, cwd=project)
