"""A dream that a host runs in two steps (pi's ``/dream``): plan, show it, apply it.

The host asks for the plan (``plan_for_host``), shows ``rendered`` (the
summary and the unified diff) and, once its user said yes, sends the very
plan back (``apply_for_host``): the LLM is asked once, and exactly what was
shown is applied (``DreamPlan.from_json``; ``apply_plan`` refuses it when a
file moved on since). Both run the code ``memlane dream`` runs.

A host that cannot ask (pi's print and json modes) asks for the plan with
*save*: it is also written to ``<store>/.dream-plan.json`` (its owner's
only, like any plan file), and ``memlane dream --apply-plan`` applies it
later without an LLM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memlane.engine.topics.dream import (
    DreamError,
    DreamPlan,
    apply_plan,
    make_plan,
    save_plan,
    sync_index,
)

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.llm.base import LLM

#: Where a plan a host could not confirm is kept, in the store.
SAVED_PLAN = ".dream-plan.json"
AGAIN = "dream again for a new plan (/dream in pi)"


def plan_for_host(mem: ProjectMemory, llm: LLM, *, save: bool = False) -> dict[str, Any]:
    """The plan (``DreamPlan.to_json``) with ``rendered`` and ``empty``; an
    empty plan is recorded as a dream at once (the topics were looked over,
    as ``memlane dream`` does) and ``applied`` is then false. With *save*, a
    plan that changes something is also saved (``saved_to``)."""
    plan = make_plan(mem, llm)
    result = plan.to_json() | {"rendered": plan.render(), "empty": plan.empty}
    if plan.empty:
        apply_plan(plan, now=mem.clock.now())
        return result | {"applied": False}
    if save:
        path = mem.scope.store / SAVED_PLAN
        save_plan(plan, path)
        result["saved_to"] = str(path)
    return result


def apply_for_host(mem: ProjectMemory, data: Any) -> dict[str, Any]:
    """Apply the plan *data* (what ``plan_for_host`` answered, as the host
    got it) to this store, and re-index: ``{applied, changes, notices}``."""
    mem.internals.require_store()
    if isinstance(data, dict):
        # What plan_for_host added for the host to show is not part of the plan.
        data = {k: v for k, v in data.items() if k not in ("rendered", "empty", "saved_to")}
    try:
        plan = DreamPlan.from_json(data, store=mem.scope.store)
        if plan.empty:
            raise DreamError("this dream plan changes nothing, so there is nothing to apply")
        apply_plan(plan, now=mem.clock.now())
    except DreamError as exc:
        if not exc.hint or "memlane dream" in exc.hint:
            # The CLI's way to plan again is not the host's.
            exc.hint = AGAIN
        raise
    return {"applied": True, "changes": len(plan.changes), "notices": sync_index(mem)}
