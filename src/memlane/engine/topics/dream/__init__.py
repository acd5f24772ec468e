"""Dream: a four-phase consolidation of the topic files (pi-memory's ``/dream``).

1. **Orient** (``orient``): the topic files, ``MEMORY.md`` and the journal
   entries written since the last dream (newest first, within
   ``JOURNAL_BUDGET_CHARS``).
2. **Gather signal** (``gather``): candidate duplicates (near-identical
   titles or contents, by normalised text) and related entries (neighbours
   in the index, ``Memory.search(kind="topic")``) that the LLM must check
   for duplicates and contradictions.
3. **Consolidate** (``consolidate``): the LLM answers a JSON plan, which
   ``parse_plan`` validates strictly; anything off (not JSON, an unknown
   topic, an empty entry, a slug that is not a plain topic name) is a
   ``DreamPlanError`` and nothing is applied.
4. **Prune & index** (``build_plan``): the new topic files are rendered
   with the store's own ``TopicFile`` (unknown frontmatter keys and text
   before the first entry kept), and ``MEMORY.md`` gets one recomputed line
   per topic; lines that are not topic lines stay.

``make_plan`` runs the four phases and returns a ``DreamPlan``: every file
that would change, before and after, and its unified diff. Nothing is
written until ``apply_plan``, which is atomic: under the topics lock it
checks that no file changed since the plan was made, records the dream intents in
``<store>/.dream-journal.json`` (``store/dream_intents``), writes every new
file to a temporary file in its own directory, keeps a hard link to every
original, renames, and only then marks the intents committed and removes
it. A failure before the mark is rolled back from the intents at once and
the error says nothing changed; a crash (SIGKILL, power cut) is rolled back
by whatever takes the topics lock next (``topics.locked()`` settles
the intents first), and a crash after the mark keeps the dream.
``recover_interrupted_dream`` does it explicitly and says what it did;
``pending_recovery`` is the read-only line for ``memlane status``. Daily
files are only ever read.

A host that shows the plan before applying it (pi's ``/dream``) cannot ask
the LLM twice: the second answer would be another plan. ``save_plan`` writes
the plan as JSON (``DreamPlan.to_json``: every change's store-relative path,
before and after text, the store, ``format_version``) and ``load_plan`` /
``DreamPlan.from_json`` read it back strictly, so exactly the plan that was
shown is applied; ``apply_plan`` still refuses it when a file moved on.

``<store>/.dream-meta.json`` holds ``last_dream_at`` (UTC, ``...Z``),
``sessions_since`` (``note_session_start`` counts) and ``nudged_at``;
``nudge`` gives the one-time suggestion to dream.

The package, one job per module, each importing only the ones above it:
``errors`` (the error types), ``meta`` (``.dream-meta.json`` and the nudge),
``recovery`` (an interrupted apply), ``orient`` (phases 1 and 2),
``consolidate`` (phase 3), ``plan`` (phase 4 and the plan file), ``apply``
(the atomic write); this module runs them (``make_plan``, ``run``) and
re-exports every public name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memlane.core.errors import ConfigError, MemlaneError
from memlane.engine.topics.dream.apply import ApplyHooks, Replacer, apply_plan
from memlane.engine.topics.dream.consolidate import (
    DREAM_MAX_TOKENS,
    DREAM_MIN_TIMEOUT_S,
    SYSTEM_PROMPT,
    TOPICS_BUDGET_CHARS,
    PlannedEntry,
    PlannedTopic,
    RawPlan,
    _name,
    build_prompt,
    consolidate,
    parse_plan,
)
from memlane.engine.topics.dream.errors import DreamError, DreamPlanError
from memlane.engine.topics.dream.meta import (
    DREAM_META,
    DreamMeta,
    note_session_start,
    nudge,
    read_meta,
    record_dream,
)
from memlane.engine.topics.dream.orient import (
    COMPARED_CHARS,
    CONTENT_SIMILARITY,
    JOURNAL_BUDGET_CHARS,
    MAX_SEARCHED_ENTRIES,
    MAX_SIGNALS,
    MIN_SHARED_WORDS,
    NEIGHBOURS_K,
    TITLE_SIMILARITY,
    JournalEntry,
    Orientation,
    Signal,
    TopicState,
    gather,
    journal_entries,
    normalise,
    orient,
)
from memlane.engine.topics.dream.plan import (
    PLAN_FORMAT_VERSION,
    DreamPlan,
    FileChange,
    build_plan,
    load_plan,
    rebuild_index_text,
    save_plan,
)
from memlane.engine.topics.dream.recovery import log, pending_recovery, recover_interrupted_dream

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.config import Config
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.llm.base import LLM
    from memlane.llm.host import HostCall

__all__ = [
    "COMPARED_CHARS",
    "CONTENT_SIMILARITY",
    "DREAM_MAX_TOKENS",
    "DREAM_META",
    "DREAM_MIN_TIMEOUT_S",
    "JOURNAL_BUDGET_CHARS",
    "MAX_SEARCHED_ENTRIES",
    "MAX_SIGNALS",
    "MIN_SHARED_WORDS",
    "NEIGHBOURS_K",
    "PLAN_FORMAT_VERSION",
    "SYSTEM_PROMPT",
    "TITLE_SIMILARITY",
    "TOPICS_BUDGET_CHARS",
    "ApplyHooks",
    "DreamError",
    "DreamMeta",
    "DreamOutcome",
    "DreamPlan",
    "DreamPlanError",
    "FileChange",
    "JournalEntry",
    "Orientation",
    "PlannedEntry",
    "PlannedTopic",
    "RawPlan",
    "Replacer",
    "Signal",
    "TopicState",
    "apply_plan",
    "build_plan",
    "build_prompt",
    "consolidate",
    "dream_llm",
    "gather",
    "journal_entries",
    "load_plan",
    "log",
    "make_plan",
    "normalise",
    "note_session_start",
    "nudge",
    "orient",
    "parse_plan",
    "pending_recovery",
    "read_meta",
    "rebuild_index_text",
    "record_dream",
    "recover_interrupted_dream",
    "run",
    "save_plan",
    "sync_index",
]

# --- the whole run ----------------------------------------------------------------------------


def dream_llm(
    config: Config,
    clock: Clock | None = None,
    *,
    host_call: HostCall | None = None,
    host: str | None = None,
) -> LLM:
    """The LLM for dreaming: ``dream.model`` (else ``topics.model``) on the
    ``[llm]`` provider; a clear ``ConfigError`` when there is none. *clock*
    (the memory's) dates its calls in the daily budget.

    *host_call*: the host's ``llm.complete`` (pi's sidecar): with
    ``llm.provider = auto`` (memlane has no model of its own) the host's model
    dreams, as it distils (llm/factory.py); a ``dream.model`` then goes to the
    host, which resolves it in its own registry. *host*: the host's name."""
    from memlane.llm.factory import make_llm

    settings = config.llm
    model = config.topics.model_for("dream")
    if model:
        # make_llm only honours a per-task model for capture; handing the
        # dream model over as that model applies the same <provider>/<id> rules.
        llm = make_llm(
            dataclasses.replace(settings, capture_model=model),
            purpose="capture",
            clock=clock,
            host_call=host_call,
            host=host,
        )
    else:
        llm = make_llm(settings, purpose="dream", clock=clock, host_call=host_call, host=host)
    if llm is None:
        raise ConfigError(
            "memlane dream needs an LLM, and none is configured",
            "set llm.provider in the [llm] section (e.g. `memlane config set llm.provider "
            'openai`, plus llm.model and llm.api_key = "env:VAR") and optionally dream.model; '
            "provider none, and auto outside a host, have no model (in pi, /dream with "
            "llm.provider auto uses pi's model)",
        )
    return llm


def make_plan(
    mem: ProjectMemory,
    llm: LLM,
    *,
    journal_budget: int = JOURNAL_BUDGET_CHARS,
) -> DreamPlan:
    """Orient, gather signal, consolidate, and render the plan; writes nothing."""
    store = mem.scope.store
    mem.internals.require_store()
    day = mem.clock.today()
    orientation = orient(store, journal_budget=journal_budget)
    if not orientation.topics and not orientation.journal:
        return DreamPlan(store=store, model=_name(llm))
    try:
        mem.sync(quiet_when_idle=True)
        searchable: ProjectMemory | None = mem
    except MemlaneError:
        searchable = None  # the index is optional here; text comparison still runs
    signals = gather(orientation, searchable)
    timeout = max(mem.config.llm.timeout_s, DREAM_MIN_TIMEOUT_S)
    answer, shown = consolidate(llm, orientation, signals, today=day, timeout_s=timeout)
    raw = parse_plan(answer, orientation.topics, shown=shown, today=day)
    plan = build_plan(orientation, raw, today=day, signals=signals)
    plan.model = _name(llm)
    return plan


def sync_index(mem: ProjectMemory) -> list[str]:
    """Bring the index up to date after an apply; a failure is a notice only."""
    try:
        return list(mem.sync(operation="dream").notices)
    except MemlaneError as exc:
        return [f"the topic files were rewritten but the index was not updated ({exc.message})"]


@dataclass
class DreamOutcome:
    plan: DreamPlan
    applied: bool
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.plan.to_json() | {"applied": self.applied, "notices": list(self.notices)}


def run(
    mem: ProjectMemory,
    confirm: Callable[[DreamPlan], bool],
    *,
    llm: LLM | None = None,
) -> DreamOutcome:
    """The whole dream for a host (``/dream``): plan, ask *confirm* with the
    plan (its ``render()`` is the diff to show), apply only on True, re-index.
    An empty plan is not asked about; it still counts as a dream."""
    plan = make_plan(mem, llm or dream_llm(mem.config, mem.clock))
    if plan.empty:
        apply_plan(plan, now=mem.clock.now())
        return DreamOutcome(plan, applied=False)
    if not confirm(plan):
        return DreamOutcome(plan, applied=False)
    apply_plan(plan, now=mem.clock.now())
    return DreamOutcome(plan, applied=True, notices=sync_index(mem))
