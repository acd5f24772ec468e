"""The quick commands, without the command-line framework.

``memlane search``, ``write``, ``expand``, ``transcript`` and ``scope`` are
what an agent or a person runs many times a session. Importing typer (which
brings pydantic and its own click) and building the command tree costs about
half a second of CPU, more than the command itself once the engine is warm.
So the code of these commands lives in cli/quick_cmds.py, free of typer, and
runs two ways:

- from the full command line (cli/commands.py's typer functions call it),
  where typer parses the arguments, prints help and reports usage errors;
- from ``run`` here (cli/fast.py when no engine serves the call, and the
  engine itself, hosts/server/commands.py), which parses a command line
  with the small parser below and runs the same function.

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

from memlane.cli.quick_cmds import (
    expand_command,
    scope_command,
    search_command,
    transcript_command,
    write_command,
)

if TYPE_CHECKING:
    from memlane.core.clock import Clock

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
    "write": Spec(("text",), 1, (Option(("--supersedes",), "supersedes"), _JSON)),
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
            Option(("--newest-first",), "newest_first", "flag"),
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


def _str(values: Values, key: str) -> str | None:
    value = values[key]
    return value if isinstance(value, str) else None


def _run_scope(directory: Path | None, clock: Clock, values: Values) -> None:
    scope_command(directory, bool(values["as_json"]))


def _run_write(directory: Path | None, clock: Clock, values: Values) -> None:
    supersedes = _str(values, "supersedes")
    write_command(
        directory,
        clock,
        str(values["text"]),
        bool(values["as_json"]),
        (supersedes,) if supersedes else (),
    )


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
        newest_first=bool(values["newest_first"]),
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
