"""The catch-up before a search: index just the files this process wrote since the last run.

What ``FreshWrites`` (journal/fresh.py) records, this indexes: no walk of the
store, and nothing at all when nothing was written.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory
    from memlane.engine.reports import IndexReport


def catch_up(
    memory: ProjectMemory, char_limit: int | None, *, embed: bool = True
) -> IndexReport | None:
    """Index the files *memory*'s process wrote since they were last indexed.

    ``embed=False`` (the model is still loading): their chunks are stored for
    the lexical leg only, at once; the next index run embeds them.

    A few stat calls, a read of each written file and the embedding of its
    new chunks. Index writes go through the index's own write transactions,
    so a catch-up is safe beside the session's background indexer and other
    processes, and writing a file another writer has just indexed is
    idempotent. It leaves the index state file alone (it covers a few files,
    not the store): the next full run records its report.
    """
    from memlane.embed.factory import vector_space

    fresh = memory.fresh
    written_upto, sources = fresh.snapshot()
    if not sources:
        return None
    started = time.perf_counter()
    index = memory.index
    if index.rebuilt_reason is not None:
        # Rebuilt empty from damage: the fresh files are not all it lacks.
        return memory.sync(quiet_when_idle=True)
    if index.ensure_model(vector_space(memory.config.embedding), None):
        report = memory.sync(quiet_when_idle=True)  # wiped for a new model: the same
        report.notices.append("the embedding setup changed; every chunk was embedded again")
        return report
    indexer = memory.indexer() if embed else memory.indexer().lexical_only()
    plan = indexer.plan_files(sources)
    embeds = embed and memory.config.embedding.provider != "none"
    if embeds and char_limit is not None and plan.embedding_chars > char_limit:
        fresh.left_to_indexer()
        return None
    report = indexer.apply(plan, "catch-up")
    fresh.indexed(written_upto, sources)
    fresh.note(plan.changed_since())
    memory.add_embedder_notice(indexer, report)
    if plan.sources:
        fresh.caught_up(report, len(plan.sources), (time.perf_counter() - started) * 1000)
    return report


def catch_up_before_search(memory: ProjectMemory, *, embed: bool = True) -> list[str]:
    """``catch_up`` within the handle's limit; a failure is a notice, never a failed search."""
    from memlane.index.protocol import IndexBusyError

    try:
        report = catch_up(memory, memory.catch_up_char_limit, embed=embed)
    except IndexBusyError as exc:
        # Locked past the read's wait budget: the writes stay noted (and in
        # the markdown) for the next search or index run.
        memory.fresh.failed()
        from memlane.engine.lock_waits import newest_not_indexed

        return [newest_not_indexed(exc)]
    except MemlaneError as exc:
        memory.fresh.failed()
        return [f"the newest memories may be missing: indexing them failed ({exc.message})"]
    return list(report.notices) if report is not None else []
