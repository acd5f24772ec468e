"""A ``memlane`` command line run inside the engine, for a CLI that found one running.

``memlane search …`` in a terminal starts a small process that hands its
command line to the running engine (cli/fast.py) and prints what comes back,
so the command costs a process start and a few milliseconds instead of
importing the engine and loading the model. The engine runs the very same
command code (cli/main.py) on the connection's thread, with:

- that thread's standard streams routed to buffers (``RoutedStream``; every
  other thread still writes to the engine's own streams), and the client's
  standard input, when the command reads it, as a string;
- the project's open memory: the command runs on the project's CLI thread
  (hosts/server/projects.py), and its ``open_memory`` gets a handle lent by
  that thread's memory (``Memory.internals.lend``): the engine's loaded model, writer
  and record of fresh writes, and an index connection kept open between
  commands, so a search finds its caches warm.

The quick commands (search, write, expand, transcript, scope) run without
typer (cli/quick.py), the others through the full command line.

The client only hands over commands whose meaning does not depend on the
process they run in (cli/fast.py's ``DELEGATED``): no relative path
argument, no question asked on the terminal.

A long command (pi's ``/memory reindex``: every past message embedded
again) can be started instead of waited for (``start``): it runs on a thread
of its own with a handle of its own, so the project's other commands and
sessions go on meanwhile, and ``job`` tells how far it got (the progress its
command reports, as the terminal's progress bar would show it) and, once
done, what it printed. The same command line started again while it runs is
the same job. The engine does not exit on idle while a job runs.
"""

from __future__ import annotations

import io
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from memlane.hosts.server.projects import with_scope

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.engine.project import Memory
    from memlane.engine.shared.results import Progress
    from memlane.hosts.server.projects import Projects

#: Runs one whole ``memlane`` command line in this process: its exit code.
FullCommandLine = Callable[[list[str], "Clock"], int]

_routes = threading.local()
_install_lock = threading.Lock()
#: Finished jobs kept for ``job`` to report (the oldest are forgotten first).
KEPT_JOBS = 16


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


class Job:
    """One command started in the background (``Commands.start``)."""

    def __init__(self, number: int, argv: list[str], cwd: str) -> None:
        self.id = f"job-{number}"
        self.argv = argv
        self.cwd = cwd
        self.started = time.monotonic()
        self.seconds: float | None = None
        self.progress: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.result is None

    def note(self, done: int, total: int, phase: str) -> None:
        """What the command reports of its progress (a ``Progress``)."""
        self.progress = {"done": done, "total": total, "phase": phase}

    def finish(self, result: dict[str, Any]) -> None:
        self.seconds = time.monotonic() - self.started
        self.result = result

    def to_json(self) -> dict[str, Any]:
        seconds = self.seconds if self.seconds is not None else time.monotonic() - self.started
        return {
            "job": self.id,
            "argv": self.argv,
            "running": self.running,
            "seconds": round(seconds, 1),
            "progress": self.progress,
            **(self.result or {}),
        }


class Commands:
    """Runs one command line for a client (the ``cli`` method of hosts/server/rpc.py)."""

    def __init__(self, projects: Projects, full: FullCommandLine) -> None:
        """``full``: the whole command line (cli/main.py's ``main``), for what the
        quick commands do not cover; handed in, as the command line runs this too
        (``memlane sidecar`` serving pi in its own process)."""
        self.projects = projects
        self.full = full
        self._jobs: dict[str, Job] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, argv: list[str], cwd: str, workdir: str | None = None) -> dict[str, Any]:
        """Start ``memlane -C CWD ARGV`` on a thread of its own and answer at once:
        the job (``already``: the same command line was running already)."""
        with self._lock:
            for job in self._jobs.values():
                if job.running and job.argv == argv and job.cwd == cwd:
                    return {**job.to_json(), "already": True}
            job = Job(next(self._numbers), list(argv), cwd)
            self._jobs[job.id] = job
            done = [j for j in self._jobs.values() if not j.running]
            for old in done[: max(0, len(done) - KEPT_JOBS)]:
                del self._jobs[old.id]
        project = self.projects.for_dir(cwd)

        scope = self.projects.scope_of(cwd)

        def run() -> None:
            memory = with_scope(project.memory.fork(), scope)
            try:
                result = self._run(argv, cwd, None, workdir or cwd, memory, job.note)
            except BaseException as exc:  # the job reports it; the engine goes on
                result = {"stdout": "", "stderr": f"memlane: error: {exc!r}\n", "code": 1}
            finally:
                memory.close()
            job.finish(result)

        threading.Thread(target=run, name=f"memlane-{job.id}", daemon=True).start()
        return {**job.to_json(), "already": False}

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job's state: running, its progress, and once done what it printed."""
        with self._lock:
            job = self._jobs.get(job_id)
        return None if job is None else job.to_json()

    def busy(self) -> bool:
        """A started job is still running."""
        with self._lock:
            return any(job.running for job in self._jobs.values())

    def __call__(
        self, argv: list[str], cwd: str, stdin: str | None, workdir: str | None = None
    ) -> dict[str, Any]:
        """Run ``memlane -C CWD ARGV``; *workdir*: where the client runs (paths are
        shown relative to it)."""
        # The project is looked up here, not on its own threads (a project whose
        # settings changed is closed and opened again on the way).
        project = self.projects.for_dir(cwd)
        return project.run_command(
            lambda memory: self._run(argv, cwd, stdin, workdir or cwd, memory),
            self.projects.scope_of(cwd),
        ).result()

    def _run(
        self,
        argv: list[str],
        cwd: str,
        stdin: str | None,
        workdir: str,
        lent: Memory,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        from memlane.cli import quick
        from memlane.cli.context import memory_opener, progress_sink, working_directory

        _install()
        out, err = io.StringIO(), io.StringIO()
        _routes.stdout, _routes.stderr = out, err
        _routes.stdin = io.StringIO(stdin or "")

        def open_memory(directory: Path | None, clock: Clock) -> Memory:
            # The project's memory as the engine holds it: its model, its writer,
            # and for this project its open index (another one gets a handle).
            wanted = os.path.normpath(directory or cwd)
            if wanted == os.path.normpath(cwd):
                return lent  # always, for the -C below
            return with_scope(
                self.projects.for_dir(wanted).memory.fork(), self.projects.scope_of(wanted)
            )

        token = memory_opener.set(open_memory)
        where = working_directory.set(workdir)
        sink = progress_sink.set(progress)
        command = ["-C", cwd, *argv]
        try:
            # The quick commands without typer (cli/quick.py), the others in full.
            code = quick.run(command, clock=self.projects.clock)
            if code is None:
                code = self.full(command, self.projects.clock)
        finally:
            progress_sink.reset(sink)
            working_directory.reset(where)
            memory_opener.reset(token)
            _routes.stdout = _routes.stderr = _routes.stdin = None
        return {"stdout": out.getvalue(), "stderr": err.getvalue(), "code": code}
