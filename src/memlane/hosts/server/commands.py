"""A ``memlane`` command line run inside the engine, for a CLI that found one running.

``memlane search …`` in a terminal starts a small process that hands its
command line to the running engine (cli/fast.py) and prints what comes back,
so the command costs a process start and a few milliseconds instead of
importing the engine and loading the model. The engine runs the very same
command code (cli/main.py) on the connection's thread, with:

- that thread's standard streams routed to buffers (``RoutedStream``; every
  other thread still writes to the engine's own streams), and the client's
  standard input, when the command reads it, as a string;
- the project's open memory: a command's ``open_memory`` gets a handle
  (``Memory.fork``) sharing the engine's loaded model, writer and record of
  fresh writes, with an index connection of its own for this thread.

The client only hands over commands whose meaning does not depend on the
process they run in (cli/fast.py's ``DELEGATED``): no relative path
argument, no question asked on the terminal.
"""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.engine.project import Memory
    from memlane.hosts.server.projects import Projects

_routes = threading.local()
_install_lock = threading.Lock()


class RoutedStream(io.TextIOBase):
    """A standard stream that writes to this thread's buffer when it has one."""

    def __init__(self, name: str, fallback: TextIO) -> None:
        self._name = name
        self._fallback = fallback

    def _target(self) -> IO[str]:
        routed: IO[str] | None = getattr(_routes, self._name, None)
        return routed if routed is not None else self._fallback

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def read(self, size: int | None = -1) -> str:
        return self._target().read(-1 if size is None else size)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self._target().readline(-1 if size is None else size)

    def isatty(self) -> bool:
        return getattr(_routes, self._name, None) is None and self._fallback.isatty()

    def fileno(self) -> int:
        if getattr(_routes, self._name, None) is not None:
            raise io.UnsupportedOperation("a routed stream has no file descriptor")
        return self._fallback.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def readable(self) -> bool:
        return self._name == "stdin"

    def writable(self) -> bool:
        return self._name != "stdin"


def _install() -> None:
    """Route the process's standard streams per thread (once, idempotent)."""
    with _install_lock:
        if not isinstance(sys.stdout, RoutedStream):
            sys.stdout = RoutedStream("stdout", sys.stdout)
        if not isinstance(sys.stderr, RoutedStream):
            sys.stderr = RoutedStream("stderr", sys.stderr)
        if not isinstance(sys.stdin, RoutedStream):
            sys.stdin = RoutedStream("stdin", sys.stdin)


class Commands:
    """Runs one command line for a client (the ``cli`` method of hosts/server/rpc.py)."""

    def __init__(self, projects: Projects) -> None:
        self.projects = projects

    def __call__(self, argv: list[str], cwd: str, stdin: str | None) -> dict[str, Any]:
        from memlane.cli.context import memory_opener
        from memlane.cli.main import main

        _install()
        out, err = io.StringIO(), io.StringIO()
        _routes.stdout, _routes.stderr = out, err
        _routes.stdin = io.StringIO(stdin or "")

        def open_memory(directory: Path | None, clock: Clock) -> Memory:
            # The project's memory as the engine holds it: its model, its writer.
            return self.projects.for_dir(str(directory or cwd)).memory.fork()

        token = memory_opener.set(open_memory)
        try:
            code = main(["-C", cwd, *argv], clock=self.projects.clock)
        finally:
            memory_opener.reset(token)
            _routes.stdout = _routes.stderr = _routes.stdin = None
        return {"stdout": out.getvalue(), "stderr": err.getvalue(), "code": code}
