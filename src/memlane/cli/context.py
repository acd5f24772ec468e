"""State shared by every command: the directory to act in and output helpers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from memlane.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.engine.reports import Progress


@dataclass
class CliState:
    directory: Path | None = None
    # Where "now" comes from for every command (core/clock.py); an in-process
    # caller (the test suite, an embedding program) may hand in its own.
    clock: Clock = field(default_factory=lambda: SYSTEM_CLOCK)


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


def open_memory(ctx: typer.Context) -> Memory:
    from memlane.engine.project import Memory

    current = state(ctx)
    opener = memory_opener.get()
    if opener is not None:
        return opener(current.directory, current.clock)
    return Memory.open(current.directory, clock=current.clock)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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
    """A rich progress bar on stderr, shown only on a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> Progress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
        return self.update

    def update(self, done: int, total: int, phase: str) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(phase)
        if task is None:
            task = self._progress.add_task(f"{self.label}: {phase}", total=total)
            self._tasks[phase] = task
        self._progress.update(task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
