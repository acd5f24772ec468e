"""Entry point of the ``memlane`` command.

Every command accepts ``-C DIR`` (act as if started in DIR). Expected
failures print one clear line and exit non-zero; tracebacks are for bugs.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from memlane.cli import (
    calibrate_cmds,
    commands,
    config_cmds,
    dream_cmds,
    engine_cmds,
    host_cmds,
    import_cmds,
    install_cmds,
    mcp_cmds,
    migrate_cmds,
    repair_cmds,
    sessions_cmds,
    topic_cmds,
    ui_cmds,
)
from memlane.cli.context import CliState, state
from memlane.cli.outcome import guarded

if TYPE_CHECKING:
    from memlane.core.clock import Clock

app = typer.Typer(
    name="memlane",
    help=(
        "Long-term memory for coding agents. Memories are plain markdown in "
        "<project>/.memsearch/memory/, indexed for hybrid (BM25 + dense) search. "
        "Recall climbs down: search (chunks) → expand (whole section) → the transcript."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from memlane.core.version import __version__

        typer.echo(f"memlane {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option("-C", help="Act as if memlane was started in DIR.", metavar="DIR"),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    # Keep what the caller handed in (main's clock); only the directory is ours.
    state(ctx).directory = directory


commands.register(app)
host_cmds.register(app)
engine_cmds.register(app)
install_cmds.register(app)
mcp_cmds.register(app)
topic_cmds.register(app)
import_cmds.register(app)
dream_cmds.register(app)
sessions_cmds.register(app)
repair_cmds.register(app)
migrate_cmds.register(app)
ui_cmds.register(app)
calibrate_cmds.register(app)
app.add_typer(config_cmds.config_app, name="config")
app.command("trust", help="Trust this project so its .memlane.toml is read.")(config_cmds.trust)


def _cli_exceptions() -> tuple[tuple[type[BaseException], ...], ...]:
    """(exit, usage error, abort) classes of whichever click typer runs on.

    Recent typer vendors its own click (``typer._click``); older ones use
    the ``click`` package. Both are caught so a bad option never shows a
    traceback.
    """
    import click

    exits: list[type[BaseException]] = [click.exceptions.Exit, typer.Exit]
    usage: list[type[BaseException]] = [click.ClickException]
    aborts: list[type[BaseException]] = [click.exceptions.Abort]
    try:
        import typer.exceptions as typer_exceptions
        from typer._click import exceptions as vendored
    except ImportError:
        pass
    else:
        usage.append(vendored.ClickException)
        aborts.append(typer_exceptions.Abort)
    return tuple(exits), tuple(usage), tuple(aborts)


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    """Run one memlane command in this process and return its exit code.

    Expected failures print one ``memlane: error:`` line (and a hint) on
    stderr instead of a traceback (cli/outcome.py). *argv* defaults to the
    process's arguments; *clock* is where every date and time comes from (by
    default the system clock, or ``MEMLANE_NOW`` when set), so a caller can
    run a command as of another moment.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return guarded(lambda: _invoke(args, clock))


def _invoke(args: list[str], clock: Clock | None) -> int:
    import os

    from memlane.core.clock import clock_from_env

    exits, usage, aborts = _cli_exceptions()
    command = _command()
    try:
        chosen = clock or clock_from_env(os.environ)
        # Parse and invoke here, not through click's main(): that one turns
        # Ctrl-C into a silent exit 130 and a closed stdout into a silent
        # exit 1 before the handlers of cli/outcome.py can say or decide anything.
        cli_state = CliState(clock=chosen, full=_full)
        with command.make_context("memlane", args, obj=cli_state) as ctx:
            code = command.invoke(ctx)
        # Output still buffered would meet a closed pipe only at exit, past the
        # handlers ("Exception ignored ... BrokenPipeError", status 120).
        sys.stdout.flush()
    except exits as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except usage as exc:
        from memlane.cli.free_text import safe_usage_message

        exc.message = safe_usage_message(exc)  # type: ignore[attr-defined]
        exc.show()  # type: ignore[attr-defined]
        return int(getattr(exc, "exit_code", 2))
    except aborts:
        sys.stderr.write("memlane: interrupted\n")
        return 130
    return code if isinstance(code, int) else 0


def _full(argv: list[str], clock: Clock) -> int:
    return main(argv, clock=clock)


@functools.cache
def _command() -> TyperGroup:
    """The click command tree of ``app``, built once per process (typer builds it
    from the command functions' signatures, which costs tens of milliseconds)."""
    command = typer.main.get_command(app)
    assert isinstance(command, TyperGroup)  # an app with subcommands is a group
    return command


def run() -> None:
    """Console-script entry: the command line's command, its exit code as the process's."""
    from memlane.core.process import exit_process

    exit_process(main())


if __name__ == "__main__":
    run()
