"""State shared by every command: the directory to act in and output helpers.

Nothing here imports the command-line framework (typer, click, rich):
the quick commands run through cli/quick.py without it, and share these.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    import typer

    from memlane.engine.project import Memory
    from memlane.engine.shared.results import Progress


@dataclass
class CliState:
    directory: Path | None = None
    # Where "now" comes from for every command (core/clock.py); an in-process
    # caller (the test suite, an embedding program) may hand in its own.
    clock: Clock = field(default_factory=lambda: SYSTEM_CLOCK)
    # The whole command line (cli/main.py's ``main``), for a command that runs
    # others: ``memlane sidecar`` serving pi's /memory subcommands itself.
    full: Callable[[list[str], Clock], int] | None = None


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):
        obj = CliState()
        ctx.find_root().obj = obj
    return obj


#: Who opens a command's memory: unset, the command opens the project itself;
#: inside the warm engine, a handle on the memory the engine holds
#: (hosts/server/commands.py), so the command shares its loaded model.
memory_opener: ContextVar[Callable[[Path | None, Clock], Memory] | None] = ContextVar(
    "memory_opener", default=None
)


#: Where a command's progress goes besides its terminal's progress bar: inside
#: the warm engine, the job that started it (hosts/server/commands.py), so the
#: client that started it can tell how far it got.
progress_sink: ContextVar[Progress | None] = ContextVar("progress_sink", default=None)


#: Where the person ran the command (relative paths are shown from there): unset,
#: this process's working directory; for a command the engine runs, its client's.
working_directory: ContextVar[str | None] = ContextVar("working_directory", default=None)


def here() -> str:
    """The directory relative paths are shown from (``working_directory``)."""
    return working_directory.get() or os.getcwd()


def open_memory(ctx: typer.Context) -> Memory:
    current = state(ctx)
    return open_memory_at(current.directory, current.clock)


def open_memory_at(directory: Path | None, clock: Clock) -> Memory:
    """The memory of the project at *directory* (None: the working directory)."""
    opener = memory_opener.get()
    if opener is not None:
        return opener(directory, clock)
    from memlane.engine.project import Memory

    return Memory.open(directory, clock=clock)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


#: What click strips from text printed to something other than a terminal.
_ANSI_RE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(text: str) -> None:
    """One line of output on stdout, as ``typer.echo`` prints it: the terminal's
    colour codes removed when stdout is not a terminal, flushed at once."""
    out = sys.stdout
    if "\033" in text and not _isatty(out):
        text = _ANSI_RE.sub("", text)
    out.write(text + "\n")
    out.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def notice(text: str) -> None:
    sys.stderr.write(f"memlane: {text}\n")


def display_path(path: str | Path) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


class ProgressBar:
    """A rich progress bar on stderr, shown only on a terminal, and only once
    there is progress to show: a command with nothing to index never imports rich."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._shown = False
        self._sink: Progress | None = None

    def __enter__(self) -> Progress:
        self._sink = progress_sink.get()  # the progress may be told on another thread
        self._shown = sys.stderr.isatty()
        return self.update

    def _start(self) -> Any:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichProgress

        progress = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        progress.start()
        return progress

    def update(self, done: int, total: int, phase: str) -> None:
        if self._sink is not None:
            self._sink(done, total, phase)
        if not self._shown:
            return
        if self._progress is None:
            self._progress = self._start()
        task = self._tasks.get(phase)
        if task is None:
            task = self._progress.add_task(f"{self.label}: {phase}", total=total)
            self._tasks[phase] = task
        self._progress.update(task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
