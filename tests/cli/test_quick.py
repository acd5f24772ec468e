"""The quick commands without typer (cli/quick.py): the same answers as the full
command line, the same declarations, and nothing of typer imported on their way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from helpers import MEMLANE, Cli, CliResult, FixedClock
from memlane.cli import commands, quick
from memlane.cli.main import app

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


class Quick(Cli):
    """``memlane ARGS`` through cli/quick.py's ``run`` (None when it hands over)."""

    def quick(
        self, *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> CliResult | None:
        before = os.getcwd()
        with CliRunner().isolation(input=input, env=dict(env or {})) as (out, err, _):
            try:
                if self.cwd is not None:
                    os.chdir(self.cwd)
                code = quick.run(list(args), clock=self.clock)
            finally:
                os.chdir(before)
                sys.stdout.flush()
                sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
        if code is None:
            assert not stdout and not stderr, "a command handed over must have said nothing"
            return None
        return CliResult(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


@pytest.fixture
def both(project: Path, clock: FixedClock) -> Quick:
    return Quick(clock, cwd=project)


def _type_of(annotation: object) -> str:
    """``int``, ``float``, ``str`` or ``flag`` for a typer parameter's annotation."""
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) else annotation
    if typing.get_origin(base) is not None:  # X | None
        base = next(a for a in typing.get_args(base) if a is not type(None))
    return {bool: "flag", int: "int", float: "float", str: "str"}[base]  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(quick.SPECS))
def test_each_quick_command_is_declared_as_typer_declares_it(name: str) -> None:
    """SPECS restates the typer declarations' shape; the two must agree."""
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    spec = quick.SPECS[name]
    hints = typing.get_type_hints(getattr(commands, name), include_extras=True)
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    assert tuple(p.name for p in arguments) == spec.arguments
    assert sum(p.required for p in arguments) == spec.required
    declared = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        assert not param.multiple and param.envvar is None and param.callback is None
        declared[param.name] = (
            tuple(param.opts) + tuple(param.secondary_opts),
            _type_of(hints[param.name]),
            getattr(param, "min", getattr(getattr(param, "type", None), "min", None)),
            getattr(param, "max", getattr(getattr(param, "type", None), "max", None)),
            param.default,
        )
    ours = {
        o.dest: (o.names, o.kind, o.low, o.high, False if o.kind == "flag" else None)
        for o in spec.options
    }
    assert ours == declared


SEARCHES = [
    ["search", "deploy"],
    ["search", "deploy", "--json"],
    ["search", "-k", "1", "deploy"],
    ["search", "-k1", "--json", "deploy"],
    ["search", "--top-k=2", "--kind", "journal", "deploy"],
    ["search", "--min-score", "0", "deploy"],
    ["search", "--min-score=0.25", "--after", "2026-01-01", "--json", "deploy"],
    ["search", "--before", "2020-01-01", "deploy"],
    ["search", "--source", ".memsearch", "deploy"],
    ["search", "--mode", "lexical", "deploy"],
    ["search", "--lexical", "--mode", "semantic", "deploy"],
    ["search", "--kind", "bogus", "deploy"],
    ["search", "--after", "yesterday", "deploy"],
    ["search"],
    ["search", "--batch", "-", "--json"],
    ["search", "--batch", "-"],
    ["search", "--", "-x marks the spot"],
    ["search", "--kind", "topic", "deploy"],
    ["scope"],
    ["scope", "--json"],
    ["expand", "0123456789abcdef"],
    ["expand", "--json", "--project", "nowhere", "0123456789abcdef"],
    ["transcript", "/nonexistent/session.jsonl"],
]


def test_the_quick_commands_answer_as_the_full_command_line(both: Quick, project: Path) -> None:
    for text in ("the deploy uses blue green slots", "- the deploy needs the vpn up"):
        full = both("write", "--", text, env=LEXICAL)
        assert full.returncode == 0, full.stderr
        fast = both.quick("write", "--", text + " (again)", env=LEXICAL)
        assert fast is not None and fast.returncode == 0, fast
        assert fast.stdout == full.stdout  # the same minute, the same file
    written = both.quick("write", "--json", "a json write", env=LEXICAL)
    assert written is not None and json.loads(written.stdout)["path"]
    for argv in SEARCHES:
        stdin = "deploy\n\nvpn\n" if "--batch" in argv else None
        full = both(*argv, env=LEXICAL, input=stdin)
        fast = both.quick(*argv, env=LEXICAL, input=stdin)
        assert fast is not None, f"memlane {' '.join(argv)} was handed over"
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            full.returncode,
            full.stdout,
            full.stderr,
        ), argv
    hit = json.loads(both("search", "--json", "blue green", env=LEXICAL).stdout)["hits"][0]
    for argv in (["expand", hit["chunk_hash"]], ["expand", "--json", hit["chunk_hash"]]):
        full, fast = both(*argv, env=LEXICAL), both.quick(*argv, env=LEXICAL)
        assert fast is not None and (fast.returncode, fast.stdout) == (full.returncode, full.stdout)
        assert "blue green" in fast.stdout, fast


def test_the_hybrid_search_is_the_same_either_way(both: Quick) -> None:
    for text in ("we cache exchange rates for five minutes", "the invoice pdf renders async"):
        assert both("write", text).returncode == 0
    full = both("search", "--json", "how long are rates cached")
    fast = both.quick("search", "--json", "how long are rates cached")
    assert fast is not None and fast.stdout == full.stdout
    assert json.loads(fast.stdout)["mode"] == "hybrid"


def test_a_directory_given_with_c_is_the_one_searched(
    both: Quick, project: Path, tmp_path: Path
) -> None:
    assert both("write", "the staging db lives in eu-west", env=LEXICAL).returncode == 0
    elsewhere = Quick(both.clock, cwd=tmp_path)
    for argv in (["-C", str(project), "search", "staging"], [f"-C{project}", "scope"]):
        fast = elsewhere.quick(*argv, env=LEXICAL)
        full = elsewhere(*argv, env=LEXICAL)
        assert fast is not None and (fast.returncode, fast.stdout) == (full.returncode, full.stdout)
    assert "eu-west" in elsewhere.quick("-C", str(project), "search", "staging").stdout  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--help"],
        ["search", "-h"],
        ["search", "-x", "deploy"],
        ["search", "--jsn", "deploy"],
        ["search", "-k", "0", "deploy"],
        ["search", "-k", "101", "deploy"],
        ["search", "-k", "five", "deploy"],
        ["search", "--min-score", "2", "deploy"],
        ["search", "--kind"],
        ["search", "--kind", "--json", "deploy"],
        ["search", "--json", "--json", "deploy"],
        ["search", "--lexical=yes", "deploy"],
        ["search", "two", "queries"],
        ["search", "-----BEGIN PRIVATE KEY-----"],
        ["write"],
        ["write", "two", "texts"],
        ["write", "- a bullet"],
        ["expand"],
        ["scope", "extra"],
        ["status"],
        ["index"],
        ["-C=elsewhere", "scope"],
        ["-C", "", "scope"],
        ["--version"],
        [],
    ],
)
def test_what_the_parser_cannot_read_for_sure_goes_to_the_full_command_line(
    both: Quick, argv: list[str]
) -> None:
    assert both.quick(*argv, env=LEXICAL) is None


def test_a_quick_command_imports_nothing_of_the_command_line_framework(
    project: Path, tmp_path: Path
) -> None:
    """The console script's path for a search with no engine (MEMLANE_ENGINE=off)."""
    script = (
        "import sys\n"
        "from memlane.cli.fast import main\n"
        "code = main(sys.argv[1:])\n"
        "heavy = sorted(m for m in ('typer', 'click', 'rich', 'pydantic') if m in sys.modules)\n"
        "print('IMPORTED', heavy, code)\n"
    )
    env = {**os.environ, "MEMLANE_ENGINE": "off", **LEXICAL}
    subprocess.run(
        [*MEMLANE, "write", "the queue retries thrice"], cwd=project, env=env, check=True
    )
    for argv in (["search", "retries"], ["write", "another note"], ["scope"]):
        done = subprocess.run(
            [sys.executable, "-c", script, *argv],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "IMPORTED [] 0" in done.stdout, (argv, done.stdout, done.stderr)
