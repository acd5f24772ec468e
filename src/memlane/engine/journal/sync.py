"""An index run: what changed in the store since the last run, and its state record.

memsearch's ``.index-state.json`` says a run started, how it ended and what it
indexed (index/state.py); the record of fresh writes (engine/shared/fresh.py) learns
which writes the run covered, so the catch-up before a search skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import IndexReport, Progress


def sync(
    memory: ProjectMemory,
    progress: Progress | None = None,
    *,
    operation: str = "index",
    quiet_when_idle: bool = False,
) -> IndexReport:
    """Index what changed in *memory*'s store since the last run.

    The embedder is only loaded when there is something new to embed, so
    a sync over an unchanged store costs a few stat calls. With
    ``quiet_when_idle`` (the catch-up before a search) an idle sync does
    not rewrite the index state file.
    """
    from memlane.embed.factory import vector_space
    from memlane.engine.index_backend import state_uri
    from memlane.engine.journal.indexer import indexer_of
    from memlane.index import state

    index = memory.index
    rebuilt = index.pop_rebuilt_reason()
    space = vector_space(memory.config.embedding)
    space_changed = index.ensure_model(space, None)
    state_path = memory.scope.state_path
    paths = [str(memory.scope.store)]
    indexer = indexer_of(memory)
    fresh = memory.internals.parts.fresh
    # Writes up to here are covered by this run (it reads the files after).
    written_upto, _ = fresh.snapshot()
    plan = indexer.plan(progress)
    if quiet_when_idle and plan.idle and not rebuilt and not fresh.unrecorded:
        # A catch-up before a search found nothing to do: leave the
        # state file alone so it keeps describing the last real run.
        report = indexer.apply(plan, operation, progress)
        fresh.indexed(written_upto)
        return report

    def record(event: Callable[..., None], *args: object) -> None:
        event(
            state_path,
            *args,
            operation=operation,
            paths=paths,
            collection=memory.collection,
            uri=state_uri(index.uri),
            now=memory.clock.now(),
        )

    record(state.record_started)
    try:
        with memory.internals.parts.index_run():
            report = indexer.apply(plan, operation, progress)
    except MemlaneError as exc:
        record(state.record_error, exc)
        raise
    fresh.indexed(written_upto)
    fresh.note(plan.changed_since())
    fresh.recorded()
    memory.embedding.note_unembedded(report, indexer.embedder_problem)
    ensure_scale(memory)
    if space_changed:
        report.notices.append(
            f"the embedding setup changed (now {space}); every chunk was embedded again"
        )
    if rebuilt:
        report.notices.insert(0, f"the index was rebuilt from markdown: {rebuilt}")
    record(state.record_report, report)
    return report


def ensure_scale(memory: ProjectMemory) -> None:
    """Measure the model's scale once, when it has none and is loaded
    already (an index run embedded with it): the probe pairs cost one
    embedding call, and a model without a scale is scored on the bundled
    model's, which can be far off (a model that puts every pair near 0.8
    would make every search look certain)."""
    if memory.config.embedding.provider.strip().lower() == "none":
        return
    if memory.internals.model_scale.source != "none" or not memory.embedding.ready:
        return
    embedder = memory.embedding.embedder
    if embedder is None:
        return
    from memlane.core.errors import EmbedderError
    from memlane.engine.calibration import derive_scale

    try:
        memory.internals.model_scale = derive_scale(memory.config.embedding, embedder, memory.clock)
    except (EmbedderError, OSError):
        return  # measured at a later index run
