"""The quick commands, without the command-line framework.

``memlane search``, ``write``, ``expand``, ``transcript`` and ``scope`` are
what an agent or a person runs many times a session. Importing typer (which
brings pydantic and its own click) and building the command tree costs about
half a second of CPU, more than the command itself once the engine is warm.
So the code of these commands lives here, free of typer, and runs two ways:

- from the full command line (cli/commands.py's typer functions call the
  ``*_command`` functions below), where typer parses the arguments, prints
  help and reports usage errors;
- from ``run`` (cli/fast.py when no engine serves the call, and the engine
  itself, hosts/server/commands.py), which parses a command line with the
  small parser below and runs the same function.

The parser only takes the plain forms: known options (``--json``,
``-k 5``, ``-k5``, ``--kind=topic``), the command's positional arguments
and ``--``. Anything else (``--help``, an unknown or repeated option, a
value out of range, a text that starts with ``-``, a missing argument)
makes ``run`` answer None, and the full command line runs instead and says
what is wrong. ``SPECS`` restates the typer declarations' shape (names,
flags, value types and ranges); tests/cli/test_quick.py checks that the two
agree, so the typer functions stay the one place a command is declared.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.cli.context import ProgressBar, echo, notice, open_memory_at, print_json

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.types import SearchResult
    from memlane.engine.project import Memory
    from memlane.engine.reports import Progress
    from memlane.engine.sessions.layer import SessionsLayer

Values = dict[str, object]


@dataclass(frozen=True)
class Option:
    """One option of a quick command: its names, where its value goes, and its type
    (``flag``, ``str``, ``int`` or ``float``, with the range typer enforces)."""

    names: tuple[str, ...]
    dest: str
    kind: str = "str"
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Spec:
    """A quick command's arguments: its positional arguments in order (the first
    ``required`` of them must be given) and its options."""

    arguments: tuple[str, ...]
    required: int
    options: tuple[Option, ...]


_JSON = Option(("--json",), "as_json", "flag")
_PROJECT = Option(("--project",), "project")

SPECS: dict[str, Spec] = {
    "scope": Spec((), 0, (_JSON,)),
    "write": Spec(("text",), 1, (_JSON,)),
    "search": Spec(
        ("query",),
        0,
        (
            Option(("-k", "--top-k"), "k", "int", 1, 100),
            Option(("--kind",), "kind"),
            Option(("--after",), "after"),
            Option(("--before",), "before"),
            Option(("--session",), "session"),
            Option(("--source",), "source"),
            Option(("--lexical",), "lexical", "flag"),
            Option(("--mode",), "mode"),
            Option(("--batch",), "batch"),
            Option(("--all",), "all_projects", "flag"),
            Option(("--min-score",), "min_score", "float", 0.0, 1.0),
            _JSON,
        ),
    ),
    "expand": Spec(("chunk_hash",), 1, (_PROJECT, _JSON)),
    "transcript": Spec(("path",), 1, (Option(("--turn",), "turn"), _PROJECT, _JSON)),
}

_INT_RE = re.compile(r"[0-9]{1,9}")
_FLOAT_RE = re.compile(r"[0-9]{1,9}(?:\.[0-9]{0,12})?|\.[0-9]{1,12}")


def parse(command: str, args: Sequence[str]) -> Values | None:
    """The values of *args* for *command*, every option present (None when absent,
    False for a flag), or None when only the full command line may read them."""
    spec = SPECS.get(command)
    if spec is None:
        return None
    by_name = {name: option for option in spec.options for name in option.names}
    values: Values = {o.dest: (False if o.kind == "flag" else None) for o in spec.options}
    seen: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional.extend(args[i:])
            break
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        name, attached = _split_option(arg, by_name)
        option = by_name.get(name)
        if option is None or option.dest in seen:
            return None  # unknown (the full CLI says which), or given twice
        seen.add(option.dest)
        if option.kind == "flag":
            if attached is not None:
                return None
            values[option.dest] = True
            continue
        if attached is None:
            if i >= len(args) or (args[i].startswith("-") and args[i] != "-"):
                return None  # "requires an argument", or a value typer may read otherwise
            attached = args[i]
            i += 1
        value = _value(option, attached)
        if value is None:
            return None
        values[option.dest] = value
    if not spec.required <= len(positional) <= len(spec.arguments):
        return None
    for dest, given in zip(spec.arguments, positional, strict=False):
        values[dest] = given
    for dest in spec.arguments[len(positional) :]:
        values[dest] = None
    return values


def _split_option(arg: str, by_name: Mapping[str, Option]) -> tuple[str, str | None]:
    """(option name, value given with it): ``--kind=topic``, ``-k5``, ``--json``."""
    if arg.startswith("--"):
        name, eq, value = arg.partition("=")
        return name, value if eq else None
    if len(arg) > 2 and arg[:2] in by_name:
        return arg[:2], arg[2:]
    return arg, None


def _value(option: Option, raw: str) -> object | None:
    """The typed value, or None when typer might read *raw* otherwise (it then
    gets the whole command line and says what is wrong)."""
    if option.kind == "str":
        return raw
    number: float
    if option.kind == "int" and _INT_RE.fullmatch(raw):
        number = int(raw)
    elif option.kind == "float" and _FLOAT_RE.fullmatch(raw):
        number = float(raw)
    else:
        return None
    if option.low is not None and number < option.low:
        return None
    if option.high is not None and number > option.high:
        return None
    return number


def run(argv: Sequence[str], *, clock: Clock | None = None) -> int | None:
    """Run ``memlane ARGV`` when it is a quick command in a plain form; its exit
    code, or None when the full command line must run it (nothing was done)."""
    directory: Path | None = None
    args = list(argv)
    if args[:1] == ["-C"] and len(args) >= 2:
        directory, args = Path(args[1]) if args[1] else None, args[2:]
    elif args and args[0].startswith("-C") and not args[0].startswith("-C="):
        directory, args = Path(args[0][2:]), args[1:]
    if not args or (directory is None and args[0] != argv[0]):
        return None  # an empty -C, or a form of it typer reads its own way
    command, rest = args[0], args[1:]
    values = parse(command, rest)
    if values is None:
        return None
    from memlane.cli.outcome import guarded

    def invoke() -> int:
        from memlane.core.clock import clock_from_env

        chosen = clock or clock_from_env(os.environ)
        COMMANDS[command](directory, chosen, values)
        sys.stdout.flush()
        return 0

    return guarded(invoke)


# -- the commands --------------------------------------------------------------------------


def scope_command(directory: Path | None, as_json: bool) -> None:
    """Where this project's memory lives: scope, store, collection, state directory."""
    from memlane.core.scope import resolve_scope

    resolved = resolve_scope(directory)
    if as_json:
        print_json(resolved.to_json())
        return
    data = resolved.to_json()
    width = max(len(k) for k in data)
    for key, value in data.items():
        echo(f"{key:<{width}}  {value if value is not None else '(none)'}")
    if resolved.state_dir_note:
        notice(resolved.state_dir_note)


def write_command(directory: Path | None, clock: Clock, text: str, as_json: bool) -> None:
    """Append a timestamped, anchored memory entry to today's daily file."""
    if text == "-":
        text = sys.stdin.read()
    with open_memory_at(directory, clock) as mem:
        entry = mem.write(text)
    if as_json:
        print_json(entry.to_json())
    else:
        echo(f"Wrote an entry at {entry.time} to {entry.path}")


def search_command(
    directory: Path | None,
    clock: Clock,
    *,
    query: str | None,
    k: int | None = None,
    kind: str | None = None,
    after: str | None = None,
    before: str | None = None,
    session: str | None = None,
    source: str | None = None,
    lexical: bool = False,
    mode: str | None = None,
    batch: str | None = None,
    all_projects: bool = False,
    min_score: float | None = None,
    as_json: bool = False,
) -> None:
    """L1 recall: the top chunks for a query (the options of ``memlane search``)."""
    from dataclasses import replace

    from memlane.core.errors import MemlaneError
    from memlane.core.render import render_search
    from memlane.engine.recall.request import SearchRequest, check_request
    from memlane.engine.recall.router import search as route_search

    if lexical and mode not in (None, "lexical"):
        raise MemlaneError(f"--lexical contradicts --mode {mode}", "give one of them")
    if (query is None) == (batch is None):
        raise MemlaneError(
            "give either a QUERY or --batch FILE", "memlane search 'what to look for'"
        )
    if batch is not None and not as_json:
        raise MemlaneError("--batch prints JSON lines", "add --json")
    if kind in ("session", "all") and (batch is not None or source is not None or all_projects):
        raise MemlaneError(f"--kind {kind} takes one QUERY and no --batch, --source or --all")
    if all_projects and (batch is not None or source is not None):
        raise MemlaneError("--all takes one QUERY and no --batch or --source")
    request = SearchRequest(
        query or "",
        k,
        kind=kind,
        scope="all" if all_projects else "project",
        after=after,
        before=before,
        session=session,
        source_prefix=str(Path(source).expanduser().resolve()) if source else None,
        mode="lexical" if lexical else mode or "hybrid",
        min_score=min_score,
        # The notes are synced once below, with a progress bar, before any query.
        sync=False,
    )
    check_request(request)  # a bad argument is said before anything is indexed
    hint = None
    with open_memory_at(directory, clock) as mem:
        if request.route in ("sessions", "everything"):
            catch_up_sessions(mem)
            hint = "memlane transcript SOURCE --turn ID, or memlane expand HASH"
        caught_up: list[str] = []
        if request.route in ("notes", "everything"):
            if request.route == "notes":
                mem.require_store()
            # The catch-up before the search shows a bar when it has much to do
            # (a new store, or every note embedded again after an upgrade).
            with ProgressBar("indexing") as bar:
                caught_up = _catch_up_notes(mem, bar)
        if batch is not None:
            for line in caught_up:
                notice(line)
            _search_batch(
                _batch_queries(batch),
                lambda text: route_search(mem, replace(request, query=text)).result,
            )
            return
        recalled = route_search(mem, request)
        for text in mem.notices:
            notice(text)
    result = recalled.result
    result.notices[:0] = caught_up
    if recalled.fan_out is not None:
        if as_json:
            print_json(recalled.fan_out.to_json())
        else:
            echo(render_search(result, None, "memlane expand HASH --project PROJECT"))
        return
    if as_json:
        print_json(result.to_json())
    elif hint is not None:
        echo(render_search(result, os.getcwd(), hint))
    else:
        echo(render_search(result, os.getcwd()))


def catch_up_sessions(mem: Memory) -> SessionsLayer:
    """The project's sessions layer with every new message indexed (progress on stderr)."""
    from memlane.engine.sessions.layer import SessionsLayer

    layer = SessionsLayer(mem)
    with ProgressBar("sessions") as progress:
        report = layer.backfill(progress)
    if report.activity:
        notice(f"indexed {report.documents_added} new session message(s) first")
    return layer


def _catch_up_notes(mem: Memory, bar: Progress) -> list[str]:
    """Index what changed before a search; an index that cannot be used now
    is left for the search to report (it says the index is unavailable)."""
    from memlane.index.protocol import (
        DimensionMismatchError,
        IndexBusyError,
        IndexUnavailableError,
    )

    try:
        return mem.sync(bar, quiet_when_idle=True).notices
    except (IndexUnavailableError, DimensionMismatchError):
        return []
    except IndexBusyError:
        # A Milvus Lite database another process holds (memsearch watch):
        # the search says so, as engine/recall/notes.py does for its own call.
        if mem.index.backend != "milvus":
            raise
        return []


def _batch_queries(batch: str) -> list[str]:
    """The lines of a --batch FILE (- for stdin)."""
    from memlane.core.errors import MemlaneError

    if batch == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(batch).expanduser().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemlaneError(f"cannot read --batch file {batch}: {exc}") from None


def _search_batch(queries: list[str], one: Callable[[str], SearchResult]) -> None:
    """One compact JSON object per query, in order; a blank line gets an
    empty answer, so outputs stay aligned with inputs. The index caught up
    once, before the first query."""
    import json

    for query in queries:
        data = {"query": query, **one(query).to_json()}
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def expand_command(
    directory: Path | None, clock: Clock, chunk_hash: str, project: str | None, as_json: bool
) -> None:
    """L2 recall: the whole section a chunk came from, with its session anchor."""
    arguments: dict[str, str] = {"chunk_hash": chunk_hash}
    if project:
        arguments["project"] = project
    tool_command(directory, clock, "memory_expand", arguments, as_json)


def transcript_command(
    directory: Path | None,
    clock: Clock,
    path: str,
    turn: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """L3 recall: the original conversation turns around an anchored memory."""
    arguments: dict[str, str] = {"transcript_path": path}
    if turn:
        arguments["turn"] = turn
    if project:
        arguments["project"] = project
    tool_command(directory, clock, "memory_transcript", arguments, as_json)


def tool_command(
    directory: Path | None,
    clock: Clock,
    name: str,
    arguments: Mapping[str, object],
    as_json: bool,
    prepare: Callable[[Memory], object] | None = None,
) -> None:
    """The CLI face of a tool: the same text the agent sees, or its details as JSON.

    ``prepare`` runs first on the opened memory (e.g. a sessions catch-up).
    """
    from memlane.engine.tools.dispatch import Tools

    with open_memory_at(directory, clock) as mem:
        if prepare is not None:
            prepare(mem)
        # A person at the CLI: L3 opens any transcript they name (a file they
        # can read anyway); agents over MCP or the sidecar are held to the
        # project's own sessions and anchors (engine/recall/transcript_access.py).
        result = Tools(mem, caller_is_person=True).call(name, arguments)
        for text in mem.notices:
            notice(text)
    if as_json:
        print_json(result.details)
    else:
        echo(result.text)


def _str(values: Values, key: str) -> str | None:
    value = values[key]
    return value if isinstance(value, str) else None


def _run_scope(directory: Path | None, clock: Clock, values: Values) -> None:
    scope_command(directory, bool(values["as_json"]))


def _run_write(directory: Path | None, clock: Clock, values: Values) -> None:
    write_command(directory, clock, str(values["text"]), bool(values["as_json"]))


def _run_search(directory: Path | None, clock: Clock, values: Values) -> None:
    k, min_score = values["k"], values["min_score"]
    search_command(
        directory,
        clock,
        query=_str(values, "query"),
        k=k if isinstance(k, int) else None,
        kind=_str(values, "kind"),
        after=_str(values, "after"),
        before=_str(values, "before"),
        session=_str(values, "session"),
        source=_str(values, "source"),
        lexical=bool(values["lexical"]),
        mode=_str(values, "mode"),
        batch=_str(values, "batch"),
        all_projects=bool(values["all_projects"]),
        min_score=float(min_score) if isinstance(min_score, int | float) else None,
        as_json=bool(values["as_json"]),
    )


def _run_expand(directory: Path | None, clock: Clock, values: Values) -> None:
    expand_command(
        directory,
        clock,
        str(values["chunk_hash"]),
        _str(values, "project"),
        bool(values["as_json"]),
    )


def _run_transcript(directory: Path | None, clock: Clock, values: Values) -> None:
    transcript_command(
        directory,
        clock,
        str(values["path"]),
        _str(values, "turn"),
        _str(values, "project"),
        bool(values["as_json"]),
    )


COMMANDS: dict[str, Callable[[Path | None, Clock, Values], None]] = {
    "scope": _run_scope,
    "write": _run_write,
    "search": _run_search,
    "expand": _run_expand,
    "transcript": _run_transcript,
}
