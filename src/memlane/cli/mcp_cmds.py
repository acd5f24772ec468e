"""``memlane mcp`` (the MCP server) and ``memlane install mcp --print`` (client config)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from memlane.cli.context import state
from memlane.core.errors import MemlaneError


def mcp(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option(
            "-C", help="The project directory (default: the global -C, else here).", metavar="DIR"
        ),
    ] = None,
) -> None:
    """Serve the memory tools over MCP on stdin/stdout, for any MCP client.

    Started by the client (see `memlane install mcp --print`); exits when stdin
    closes. Logs go to stderr.
    """
    from memlane.hosts.mcp.thin import run as serve_mcp

    chosen = directory or state(ctx).directory
    where = os.path.abspath(chosen) if chosen else os.getcwd()
    raise typer.Exit(serve_mcp(where, clock=state(ctx).clock))


def install_mcp(
    print_: Annotated[
        bool,
        typer.Option("--print", help="Print the config to paste into each client."),
    ] = False,
) -> None:
    """Ready-to-paste MCP config for Claude Code, Cursor and Codex."""
    from memlane.hosts.mcp.config import memlane_command, render_config

    if not print_:
        raise MemlaneError(
            "install mcp only prints the config for now",
            "run `memlane install mcp --print` and paste the block for your client",
        )
    typer.echo(render_config(memlane_command()), nl=False)


def register(app: typer.Typer) -> None:
    from memlane.cli.install_cmds import install_app

    app.command("mcp")(mcp)
    install_app.command("mcp")(install_mcp)
