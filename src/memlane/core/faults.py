"""Named steps of memlane's write paths, where a fault-injection run kills the process.

A promise such as "an acknowledged capture survives a crash" is only as good
as the moments it was tried at. Each step of a path that changes the store or
the index calls ``step("<path>.<step>")``; normally that is one attribute
read and nothing else. Two environment variables, read once per process,
turn it into a test seam for real processes (the harness in
``tests/fault/`` drives the real CLI, sidecar and MCP server with them):

``MEMLANE_FAULT_TRACE=<file>``
    append the name of every step reached to *file*, one per line (so a run
    lists the steps a scenario goes through);
``MEMLANE_FAULT_KILL=<step>[@<n>]``
    SIGKILL this process the *n*-th time (default the first) it reaches
    *step*: what ``kill -9``, an OOM kill or a power cut does at that moment.
``MEMLANE_FAULT_PAUSE=<step>`` with ``MEMLANE_FAULT_RESUME=<file>``
    hold the thread that reaches *step* until *file* exists (at most
    ``PAUSE_CAP_S``): a slow step made as slow as a test needs, so what must
    not wait for it (another request) is shown not to, without timing.

Step names are dotted, path first: ``capture.journaled``, ``index.file``,
``forget.rewritten``. Nothing else in memlane reads these variables.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping

TRACE_ENV = "MEMLANE_FAULT_TRACE"
KILL_ENV = "MEMLANE_FAULT_KILL"
PAUSE_ENV = "MEMLANE_FAULT_PAUSE"
RESUME_ENV = "MEMLANE_FAULT_RESUME"
#: The longest a paused step waits for its resume file (a test that died never writes it).
PAUSE_CAP_S = 120.0
_PAUSE_POLL_S = 0.01


class _Faults:
    """What this process was asked to do at its steps (nothing, usually)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.trace = env.get(TRACE_ENV) or None
        target = env.get(KILL_ENV) or None
        self.kill_step: str | None = None
        self.kill_at = 1
        if target:
            name, _, count = target.partition("@")
            self.kill_step = name.strip()
            self.kill_at = int(count) if count.strip().isdigit() else 1
        self.pause_step = (env.get(PAUSE_ENV) or "").strip() or None
        self.resume_file = env.get(RESUME_ENV) or None
        self.active = (
            self.trace is not None or self.kill_step is not None or self.pause_step is not None
        )
        self.reached: dict[str, int] = {}
        self.lock = threading.Lock()

    def reach(self, name: str) -> None:
        with self.lock:
            count = self.reached.get(name, 0) + 1
            self.reached[name] = count
            if self.trace is not None:
                # O_APPEND: every process of a scenario writes one line at a time.
                fd = os.open(self.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, f"{name}\n".encode())
                finally:
                    os.close(fd)
            if name == self.kill_step and count == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        if name == self.pause_step and self.resume_file is not None:
            self._pause(self.resume_file)

    @staticmethod
    def _pause(resume_file: str) -> None:
        """Outside the lock: other threads keep reaching their steps meanwhile."""
        waited = threading.Event()
        for _ in range(int(PAUSE_CAP_S / _PAUSE_POLL_S)):
            if os.path.exists(resume_file):
                return
            waited.wait(_PAUSE_POLL_S)


_faults: _Faults | None = None


def step(name: str) -> None:
    """Mark that this process reached step *name* of a write path."""
    global _faults
    faults = _faults
    if faults is None:
        faults = _faults = _Faults(os.environ)
    if faults.active:
        faults.reach(name)
