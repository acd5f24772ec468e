"""``memlane topic add|remove|list|search`` and ``memlane memory on|off|status``.

The topic commands are the CLI face of the ``memory_topic`` tool: the same
text the agent reads, or its details with ``--json``. ``memlane memory``
switches the topic layer (``topics.enabled`` in the global config file) and
shows how full MEMORY.md is.
"""

from __future__ import annotations

import json
from datetime import datetime
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

DREAM_META = ".dream-meta.json"
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


def last_dream(store: Path) -> str | None:
    """When the last dream ran, from ``<store>/.dream-meta.json``, if recorded."""
    try:
        data = json.loads((store / DREAM_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("last_dream_at", "lastDreamAt", "last_dream", "lastDream", "timestamp"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value  # pi-memory writes milliseconds
            return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")
    return None


@memory_app.command("status")
def status(ctx: typer.Context, as_json: _JSON = False) -> None:
    """Whether the topic memory is on, where it lives, and how full MEMORY.md is."""
    from memlane.store import topics as store_topics

    with open_memory(ctx) as mem:
        settings = mem.config.topics
        store = mem.scope.store
        usage = store_topics.index_usage(
            store, settings.mem_index_max_lines, settings.mem_index_max_bytes
        )
        infos = store_topics.list_topics(store)
        layer = mem.config.values["topics.enabled"].layer
    dreamt = last_dream(store)
    files = [f"{info.slug}.md" for info in infos]
    entries = sum(len(info.titles) for info in infos)
    data: dict[str, Any] = {
        "enabled": settings.enabled,
        "enabled_from": layer,
        "store": str(store),
        "memory_index": str(store_topics.memory_index_path(store)),
        "index_usage": usage.to_json(),
        "topic_files": files,
        "entries": entries,
        "last_dream": dreamt,
        "capacity_problem": usage.problem(),
    }
    if as_json:
        print_json(data)
        return
    lines = [
        f"topic memory  {'on' if settings.enabled else 'off'} (topics.enabled, from {layer})",
        f"store         {store}",
        f"MEMORY.md     {usage.lines}/{usage.max_lines} lines, "
        f"{usage.bytes}/{usage.max_bytes} bytes",
        f"topic files   {len(infos)} ({entries} entries)"
        + (": " + ", ".join(files) if infos else ""),
        f"last dream    {dreamt or 'never'}",
    ]
    if usage.problem():
        lines.append(f"WARNING: {usage.problem()}")
    typer.echo("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.add_typer(topic_app, name="topic")
    app.add_typer(memory_app, name="memory")
