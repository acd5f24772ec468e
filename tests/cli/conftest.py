"""The in-process ``cli`` of these tests checks that a command cleans up after itself.

In a real process an exit hides what a command leaves behind; in-process it
would pile up (and a thread still running when ``main`` returns is work a real
process could cut short). So every call of this directory's ``cli`` fails the
test when the command left a thread running or a file descriptor open.
"""

from __future__ import annotations

import os
import threading
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


class CleanCli(Cli):
    """``Cli`` that asserts each command left no thread and no open file behind."""

    def __call__(self, *args: str, **options: Any) -> CliResult:
        threads = set(threading.enumerate())
        fds = _open_fds() if os.path.isdir("/proc/self/fd") else None
        result = super().__call__(*args, **options)
        left = [t.name for t in threading.enumerate() if t not in threads]
        assert not left, f"memlane {' '.join(args)} left threads running: {left}"
        if fds is not None:
            opened = {fd: target for fd, target in _open_fds().items() if fds.get(fd) != target}
            assert not opened, f"memlane {' '.join(args)} left files open: {opened}"
        return result


@pytest.fixture
def cli(project: Path, clock: FixedClock) -> CleanCli:
    return CleanCli(clock, cwd=project)
