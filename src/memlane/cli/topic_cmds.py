"""``memlane topic add|remove|list|search`` and ``memlane memory on|off|status``.

The topic commands are the CLI face of the ``memory_topic`` tool: the same
text the agent reads, or its details with ``--json``. ``memlane memory``
switches the topic layer (``topics.enabled`` in the global config file) and
shows how full MEMORY.md is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from memlane.cli.context import notice, open_memory, print_json, state
from memlane.cli.free_text import FreeTextCommand

topic_app = typer.Typer(
    help=(
        "Curated knowledge: topic files (<store>/topics/<slug>.md, one '## title' entry "
        "per fact) listed one line per topic in MEMORY.md, which new sessions see."
    ),
    no_args_is_help=True,
)
memory_app = typer.Typer(
    help="Switch the topic memory on or off, or show its status.",
    no_args_is_help=True,
)

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _run(ctx: typer.Context, arguments: dict[str, Any], as_json: bool) -> None:
    from memlane.engine.topics.ops import topic_tool

    with open_memory(ctx) as mem:
        result = topic_tool(mem, arguments)
        for text in mem.notices:
            notice(text)
    if as_json:
        print_json(result.details)
    else:
        typer.echo(result.text)


@topic_app.command("add", cls=FreeTextCommand)
def add(
    ctx: typer.Context,
    content: Annotated[
        str, typer.Argument(help="The knowledge to keep. Use - to read it from standard input.")
    ],
    topic: Annotated[
        str, typer.Option("--topic", "-t", help='Topic file, e.g. "debugging.md" or "Debugging".')
    ],
    title: Annotated[
        str, typer.Option("--title", help="Self-contained title; it is what MEMORY.md shows.")
    ],
    type_: Annotated[
        str | None,
        typer.Option("--type", help="user, feedback (default), project or reference."),
    ] = None,
    as_json: _JSON = False,
) -> None:
    """Append an entry to a topic file (created if new) and update MEMORY.md."""
    import sys

    if content == "-":
        content = sys.stdin.read()
    arguments: dict[str, Any] = {"action": "add", "content": content, "topic": topic}
    arguments["title"] = title
    if type_:
        arguments["type"] = type_
    _run(ctx, arguments, as_json)


@topic_app.command("remove", cls=FreeTextCommand)
def remove(
    ctx: typer.Context,
    entry: Annotated[str, typer.Argument(help="The exact title of the entry to delete.")],
    as_json: _JSON = False,
) -> None:
    """Delete one entry by its exact title (the topic's last entry removes the file)."""
    _run(ctx, {"action": "remove", "entry": entry}, as_json)


@topic_app.command("list")
def list_(ctx: typer.Context, as_json: _JSON = False) -> None:
    """List the topics with their type, description and entry titles."""
    _run(ctx, {"action": "list"}, as_json)


@topic_app.command("search", cls=FreeTextCommand)
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    scope: Annotated[
        str,
        typer.Option(
            "--scope", help="memory (topic files, default) or sessions (past conversations)."
        ),
    ] = "memory",
    as_json: _JSON = False,
) -> None:
    """Search topic entries (whole entries back) or this project's past sessions."""
    _run(ctx, {"action": "search", "query": query, "scope": scope}, as_json)


# --- memlane memory -------------------------------------------------------------------------


def _toggle(ctx: typer.Context, enabled: bool) -> None:
    from memlane.core.config import load_config, set_value
    from memlane.core.paths import global_config_path
    from memlane.core.scope import repository_dir_of

    path = global_config_path()
    set_value(path, "topics.enabled", "true" if enabled else "false")
    typer.echo(
        f"Topic memory is {'on' if enabled else 'off'} (topics.enabled = "
        f"{'true' if enabled else 'false'} in {path})."
    )
    base = state(ctx).directory
    effective = load_config(repository_dir_of(base if base else Path.cwd())).values[
        "topics.enabled"
    ]
    if bool(effective.value) != enabled:
        # A trusted project file or the environment outranks the global file.
        notice(
            f"but in this project topics.enabled is {str(effective.value).lower()} from the "
            f"{effective.layer} layer, which outranks the global file "
            "(see `memlane config list --resolved`)"
        )


@memory_app.command("on")
def on(ctx: typer.Context) -> None:
    """Switch the topic memory on (global config)."""
    _toggle(ctx, True)


@memory_app.command("off")
def off(ctx: typer.Context) -> None:
    """Switch the topic memory off (global config); nothing is deleted."""
    _toggle(ctx, False)


@memory_app.command("status")
def status(ctx: typer.Context, as_json: _JSON = False) -> None:
    """Whether the topic memory is on, where it lives, and how full MEMORY.md is."""
    from memlane.engine.topics.overview import topic_overview

    with open_memory(ctx) as mem:
        overview = topic_overview(mem)
    if as_json:
        print_json(overview.to_json())
        return
    lines = [f"{label:<13} {value}" for label, value in overview.rows()]
    problem = overview.usage.problem()
    if problem:
        lines.append(f"WARNING: {problem}")
    typer.echo("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.add_typer(topic_app, name="topic")
    app.add_typer(memory_app, name="memory")
