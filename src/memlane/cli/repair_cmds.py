"""``memlane status --fix`` and ``memlane doctor --repair``: set damaged lines aside.

Both show the damaged lines of the store's files (store/damage.py), ask, and
then move them into ``<file>.damaged`` (store/repair.py) and index the
repaired files. ``--yes`` answers for scripts; without it and without a
terminal to ask on, nothing is moved.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.context import notice, open_memory, print_json
from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.project import Memory
    from memlane.engine.shared.results import Status
    from memlane.store.damage import DamagedLine

YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Move the damaged lines without asking (for scripts).")
]


def fix_damage(mem: Memory, *, yes: bool, as_json: bool) -> None:
    """Show the damaged lines, confirm, move them aside, reindex (module docstring)."""
    from memlane.engine.reports import describe_damage
    from memlane.store.damage import lines_to_set_aside
    from memlane.store.repair import damaged_path_of

    damaged = mem.damaged_lines()
    if not damaged:
        if as_json:
            print_json({"damaged_lines": [], "moved": []})
        else:
            typer.echo("Nothing damaged: every line of the store's files can be indexed.")
        return
    by_file: dict[str, list[DamagedLine]] = {}
    for line in damaged:
        by_file.setdefault(line.path, []).append(line)
    if not as_json:
        typer.echo(f"{len(damaged)} damaged line(s), left out of search:")
        for line in damaged:
            typer.echo(f"  {describe_damage(line)}")
        for path, lines in by_file.items():
            moving = [i + 1 for i in lines_to_set_aside(Path(path).read_bytes(), path)]
            extra = len(moving) - len(lines)
            besides = f" (and {extra} line(s) of headings they leave empty)" if extra > 0 else ""
            typer.echo(
                f"would move line(s) {', '.join(map(str, moving))} of {path}{besides} "
                f"to {damaged_path_of(Path(path))}; every other line stays"
            )
    if not yes:
        if not sys.stdin.isatty():
            raise MemlaneError(
                "not moving the damaged lines: there is no terminal to confirm on",
                "run `memlane status --fix --yes` to move them",
            )
        if not _confirmed():
            typer.echo("Nothing was changed.")
            # Not typer.Exit: main drives click with standalone_mode=False,
            # where an Exit's code is returned, not raised, and would be lost.
            raise SystemExit(1)
    moved = mem.set_aside_damage()
    for text in mem.notices:
        notice(text)
    if as_json:
        print_json(
            {
                "damaged_lines": [line.to_json() for line in damaged],
                "moved": [m.to_json() for m in moved],
            }
        )
        return
    for item in moved:
        typer.echo(f"Moved {len(item.lines)} line(s) of {item.path} to {item.damaged_path}.")
    typer.echo("The repaired files were indexed again.")


def _confirmed() -> bool:
    try:
        return typer.confirm("Move them?", default=False)
    except typer.Abort:
        return False


def doctor(
    ctx: typer.Context,
    repair: Annotated[
        bool,
        typer.Option("--repair", help="Move damaged lines into <file>.damaged (asks first)."),
    ] = False,
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Do not load the embedder to check that it works.")
    ] = False,
) -> None:
    """The same as `memlane status` (`--repair` is `status --fix`)."""
    run_status(ctx, as_json=as_json, no_probe=no_probe, fix=repair, yes=yes)


def run_status(ctx: typer.Context, *, as_json: bool, no_probe: bool, fix: bool, yes: bool) -> None:
    """``memlane status`` / ``doctor``: the report, or with *fix* the repair."""
    from memlane.engine.reports import render_status

    if yes and not fix:
        raise typer.BadParameter("--yes only answers the question --fix (--repair) asks")
    with open_memory(ctx) as mem:
        if fix:
            fix_damage(mem, yes=yes, as_json=as_json)
            return
        st = mem.status(probe=not no_probe)
    _claude_code_install(st)
    if as_json:
        print_json(st.to_json())
        return
    typer.echo(render_status(st))


def _claude_code_install(st: Status) -> None:
    """memlane in Claude Code for this project: how, and whether Claude Code trusts
    the folder (a project install in an untrusted folder loads nothing)."""
    from memlane.hosts.claude_code.install import installed

    folders = [Path(p) for p in (st.scope.get("scope"), st.scope.get("repository_dir")) if p]
    found = installed(folders)
    if found is None:
        return
    st.claude_code = found.to_json()
    if found.problem:
        st.missing.append(found.problem)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
