"""Commands that serve a host: the JSON-RPC sidecar (and, later, MCP)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.context import state


def sidecar(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option(
            "-C", help="The project directory (default: the global -C, else here).", metavar="DIR"
        ),
    ] = None,
) -> None:
    """Serve the engine to a host over JSON-RPC 2.0 on stdin/stdout (one object per line).

    Used by the pi package; exits when stdin closes. Logs go to stderr.
    """
    from memlane.hosts.pi.sidecar import run_sidecar

    current = state(ctx)
    chosen = directory or current.directory
    where = Path(chosen) if chosen else None
    raise typer.Exit(run_sidecar(where, clock=current.clock, full=current.full))


def register(app: typer.Typer) -> None:
    app.command("sidecar")(sidecar)
