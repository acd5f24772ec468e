"""``memlane dream``: consolidate the topic files, shown as a diff first.

The plan (engine/topics/dream/) is printed as a unified diff of every file that
would change; it is applied only after a yes at the prompt, or with
``--yes``. ``--dry-run`` prints and stops. Declining, or no answer at all
(standard input closed), changes nothing and exits 1.

A host that asks its user itself (pi's ``/dream``) plans once and applies
that very plan: ``--dry-run --save-plan FILE`` writes it, ``--apply-plan
FILE`` applies it without asking the LLM again (so without needing one),
refusing it when it was made for another store or a file changed since.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    save_plan: Annotated[
        Path | None,
        typer.Option(
            "--save-plan",
            metavar="FILE",
            help="With --dry-run: also write the plan to FILE, for --apply-plan.",
        ),
    ] = None,
    apply_plan: Annotated[
        Path | None,
        typer.Option(
            "--apply-plan",
            metavar="FILE",
            help="Apply the plan saved in FILE (no LLM call); refused if a file changed since.",
        ),
    ] = None,
) -> None:
    """Consolidate the topic files with the LLM: merge duplicates, keep the newer of
    contradicting facts, rebuild descriptions and MEMORY.md. Shows a diff and asks first."""
    from memlane.engine.topics import dream as D

    if as_json and not (yes or dry_run):
        raise typer.BadParameter("--json needs --yes or --dry-run (it cannot prompt)")
    if save_plan is not None and not dry_run:
        raise typer.BadParameter("--save-plan needs --dry-run (apply it with --apply-plan)")
    if apply_plan is not None and dry_run:
        raise typer.BadParameter("--apply-plan applies a plan; it cannot be a --dry-run")
    with open_memory(ctx) as mem:
        if apply_plan is not None:
            mem.internals.require_store()
            plan = D.load_plan(apply_plan, mem.scope.store)
        else:
            llm = D.dream_llm(mem.config, mem.clock)
            plan = D.make_plan(mem, llm)
        for text in mem.notices:
            notice(text)
        data: dict[str, Any] = plan.to_json() | {"rendered": plan.render()}
        if not as_json:
            typer.echo(plan.render().rstrip("\n"))
        if save_plan is not None:
            D.save_plan(plan, save_plan)
        if plan.empty or dry_run:
            if plan.empty and not dry_run:
                D.apply_plan(
                    plan, now=mem.clock.now()
                )  # records the dream: the topics were looked over
            if as_json:
                print_json(data | {"applied": False, "dry_run": dry_run})
            elif dry_run and not plan.empty:
                typer.echo("\n(dry run: nothing was changed)")
            return
        if not yes and not _confirmed():
            typer.echo("Nothing was changed.")
            # Not typer.Exit: main.run drives click with standalone_mode=False,
            # where an Exit's code is returned, not raised, and would be lost.
            raise SystemExit(1)
        D.apply_plan(plan, now=mem.clock.now())
        notices = D.sync_index(mem)
    for text in notices:
        notice(text)
    if as_json:
        print_json(data | {"applied": True, "dry_run": False, "notices": notices})
    else:
        typer.echo(f"Applied: {len(plan.changes)} file(s) changed.")


def _confirmed() -> bool:
    try:
        return typer.confirm("\nApply these changes?", default=False)
    except typer.Abort:
        return False


def register(app: typer.Typer) -> None:
    app.command("dream")(dream)
