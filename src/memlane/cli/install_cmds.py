"""``memlane install pi|claude-code|codex|opencode`` and ``memlane uninstall ...``: hook memlane into a host."""

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


ClaudeProjectOption = Annotated[
    bool,
    typer.Option(
        "--project",
        help="Use the project's .claude/settings.json (and .mcp.json) instead of your user settings.",
    ),
]
ClaudeUserOption = Annotated[
    bool,
    typer.Option(
        "--user",
        help="Use your user settings (~/.claude/settings.json, $CLAUDE_CONFIG_DIR): the default.",
    ),
]
ModeOption = Annotated[
    str,
    typer.Option(
        "--mode",
        help="plugin: a memlane plugin Claude Code loads from settings (default); "
        "settings: hooks and MCP server written into the settings files themselves.",
    ),
]


def _claude_project(ctx: typer.Context, project: bool, user: bool) -> Path | None:
    if project and user:
        from memlane.core.errors import MemlaneError

        raise MemlaneError("--project and --user exclude each other", "pass one of them")
    return _project(ctx, project)


@install_app.command("claude-code")
def install_claude_code(
    ctx: typer.Context,
    project: ClaudeProjectOption = False,
    user: ClaudeUserOption = False,
    mode: ModeOption = "plugin",
) -> None:
    """Install memlane into Claude Code: hooks, the MCP server, the recall skill (/recall), /memory.

    The default plugin mode writes memlane's plugin directory (also a local
    marketplace) and enables it in the settings; --mode settings writes the
    hooks and the MCP server into the settings files instead. Adds the allow
    rules for memlane's tools and skill. Honours CLAUDE_CONFIG_DIR. Safe to run
    again; `memlane uninstall claude-code` restores your files. docs/claude-code.md.
    """
    from memlane.hosts.claude_code.install import install

    report = install(_claude_project(ctx, project, user), mode=mode)
    for line in report.lines:
        typer.echo(line)


@uninstall_app.command("claude-code")
def uninstall_claude_code(
    ctx: typer.Context, project: ClaudeProjectOption = False, user: ClaudeUserOption = False
) -> None:
    """Remove memlane from Claude Code (reverts `memlane install claude-code`, byte for byte)."""
    from memlane.hosts.claude_code.install import uninstall

    report = uninstall(_claude_project(ctx, project, user))
    for line in report.lines:
        typer.echo(line)


@install_app.command("codex")
def install_codex(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would be added; change nothing.")
    ] = False,
) -> None:
    """Install memlane into the Codex CLI: hooks, the MCP server, the recall skill.

    Appends one marked block to $CODEX_HOME/config.toml (default ~/.codex):
    the hooks (trusted), the MCP server with MEMLANE_HOME in its env; writes
    the skill memlane-recall. Safe to run again; `memlane uninstall codex`
    restores the file byte for byte. docs/codex.md.
    """
    from memlane.hosts.codex.install import install

    report = install(dry_run=dry_run)
    for line in report.lines:
        typer.echo(line)


@uninstall_app.command("codex")
def uninstall_codex() -> None:
    """Remove memlane from the Codex CLI (reverts `memlane install codex`, byte for byte)."""
    from memlane.hosts.codex.install import uninstall

    for line in uninstall().lines:
        typer.echo(line)


OpenCodeProjectOption = Annotated[
    bool,
    typer.Option(
        "--project",
        help="Use the project's opencode.json instead of OpenCode's global configuration.",
    ),
]


@install_app.command("opencode")
def install_opencode(ctx: typer.Context, project: OpenCodeProjectOption = False) -> None:
    """Install memlane into OpenCode: its plugin (memory injected, turns captured) and MCP server.

    Writes plugins/memlane.js and the `mcp.memlane` entry (with MEMLANE_HOME and your
    other MEMLANE_* settings) in OpenCode's config directory ($XDG_CONFIG_HOME/opencode),
    or the project's with --project. Safe to run again; `memlane uninstall opencode`
    restores opencode.json byte for byte. docs/opencode.md.
    """
    from memlane.hosts.opencode.install import install

    report = install(_project(ctx, project))
    for line in report.lines:
        typer.echo(line)


@uninstall_app.command("opencode")
def uninstall_opencode(ctx: typer.Context, project: OpenCodeProjectOption = False) -> None:
    """Remove memlane from OpenCode (reverts `memlane install opencode`, byte for byte)."""
    from memlane.hosts.opencode.install import uninstall

    report = uninstall(_project(ctx, project))
    for line in report.lines:
        typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add the ``install`` and ``uninstall`` command groups to the memlane app."""
    app.add_typer(install_app, name="install")
    app.add_typer(uninstall_app, name="uninstall")
