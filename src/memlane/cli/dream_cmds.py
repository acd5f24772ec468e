"""``memlane dream``: consolidate the topic files, shown as a diff first.

The plan (engine/dream.py) is printed as a unified diff of every file that
would change; it is applied only after a yes at the prompt, or with
``--yes``. ``--dry-run`` prints and stops. Declining, or no answer at all
(standard input closed), changes nothing and exits 1.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memlane.cli.context import notice, open_memory, print_json


def dream(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Apply without asking (for scripts).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the planned changes; change nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan (and whether it was applied) as JSON.")
    ] = False,
) -> None:
    """Consolidate the topic files with the LLM: merge duplicates, keep the newer of
    contradicting facts, rebuild descriptions and MEMORY.md. Shows a diff and asks first."""
    from memlane.engine import dream as D

    if as_json and not (yes or dry_run):
        raise typer.BadParameter("--json needs --yes or --dry-run (it cannot prompt)")
    with open_memory(ctx) as mem:
        llm = D.dream_llm(mem.config)
        plan = D.make_plan(mem, llm)
        for text in mem.notices:
            notice(text)
        data = plan.to_json()
        if not as_json:
            typer.echo(plan.render().rstrip("\n"))
        if plan.empty or dry_run:
            if plan.empty and not dry_run:
                D.apply_plan(plan)  # records the dream: the topics were looked over
            if as_json:
                print_json(data | {"applied": False, "dry_run": dry_run})
            elif dry_run and not plan.empty:
                typer.echo("\n(dry run: nothing was changed)")
            return
        if not yes:
            try:
                confirmed = typer.confirm("\nApply these changes?", default=False)
            except typer.Abort:
                confirmed = False
            if not confirmed:
                typer.echo("Nothing was changed.")
                # Not typer.Exit: main.run drives click with standalone_mode=False,
                # where an Exit's code is returned, not raised, and would be lost.
                raise SystemExit(1)
        D.apply_plan(plan)
        notices = D.sync_index(mem)
    for text in notices:
        notice(text)
    if as_json:
        print_json(data | {"applied": True, "dry_run": False})
    else:
        typer.echo(f"Applied: {len(plan.changes)} file(s) changed.")


def register(app: typer.Typer) -> None:
    app.command("dream")(dream)
