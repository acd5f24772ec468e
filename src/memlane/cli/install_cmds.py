"""``memlane install pi`` and ``memlane uninstall pi``: hook memlane into a host."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.context import state

install_app = typer.Typer(help="Install memlane into a coding agent.", no_args_is_help=True)
uninstall_app = typer.Typer(help="Remove memlane from a coding agent.", no_args_is_help=True)

ProjectOption = Annotated[
    bool,
    typer.Option(
        "--project",
        help="Use the project's .pi/settings.json instead of pi's global settings.",
    ),
]


def _project(ctx: typer.Context, project: bool) -> Path | None:
    if not project:
        return None
    base = state(ctx).directory
    return (base if base else Path.cwd()).absolute()


@install_app.command("pi")
def install_pi(ctx: typer.Context, project: ProjectOption = False) -> None:
    """Add the memlane pi package to pi's settings (global, or the project's with --project).

    Honours PI_CODING_AGENT_DIR. Records this memlane's absolute path in
    memlane.json beside the settings file, so pi runs it even when it lives
    in a virtualenv pi's shell does not activate. Safe to run again.
    """
    from memlane.hosts.pi.install import install

    report = install(_project(ctx, project))
    for line in report.lines:
        typer.echo(line)


@uninstall_app.command("pi")
def uninstall_pi(ctx: typer.Context, project: ProjectOption = False) -> None:
    """Remove the memlane pi package from pi's settings (reverts `memlane install pi`)."""
    from memlane.hosts.pi.install import uninstall

    report = uninstall(_project(ctx, project))
    for line in report.lines:
        typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add the ``install`` and ``uninstall`` command groups to the memlane app."""
    app.add_typer(install_app, name="install")
    app.add_typer(uninstall_app, name="uninstall")
