"""``memlane import pi-memory|claude-code``: bring existing memories into the topic layer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.context import notice, open_memory, print_json

if TYPE_CHECKING:
    from memlane.engine.topics.importers import ImportReport

import_app = typer.Typer(
    help=(
        "Import memories kept by another tool into memlane's topic files. Nothing is lost "
        "(what cannot be read as entries is kept verbatim in an imported-<source> topic) and "
        "re-running adds nothing."
    ),
    no_args_is_help=True,
)

_DRY_RUN = Annotated[
    bool, typer.Option("--dry-run", help="Show what would be imported; write nothing.")
]
_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _show(report: ImportReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_json())
    else:
        typer.echo(report.render())


@import_app.command("pi-memory")
def pi_memory(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Argument(
            help="The pi-memory directory (default: ~/.pi/memory/<hash>/ of this project, "
            "the hash being the first 12 hex digits of the sha256 of its git root)."
        ),
    ] = None,
    dry_run: _DRY_RUN = False,
    as_json: _JSON = False,
) -> None:
    """Import pi-memory's topic files (and MEMORY.md notes) of this project."""
    from memlane.engine.topics.importers import import_pi_memory

    with open_memory(ctx) as mem:
        report = import_pi_memory(mem, directory, dry_run=dry_run)
        for text in mem.notices:
            notice(text)
    _show(report, as_json)


@import_app.command("claude-code")
def claude_code(
    ctx: typer.Context,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            help="The project whose Claude Code auto memory to import (default: this one), "
            "or a Claude Code memory directory itself.",
        ),
    ] = None,
    dry_run: _DRY_RUN = False,
    as_json: _JSON = False,
) -> None:
    """Import Claude Code's auto memory (~/.claude/projects/<project>/memory/)."""
    from memlane.engine.topics.importers import import_claude_code

    with open_memory(ctx) as mem:
        report = import_claude_code(mem, project, dry_run=dry_run)
        for text in mem.notices:
            notice(text)
    _show(report, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
