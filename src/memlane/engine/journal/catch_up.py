"""The catch-up before a search: index just the files this process wrote since the last run.

What ``FreshWrites`` (engine/shared/fresh.py) records, this indexes: no walk of the
store, and nothing at all when nothing was written.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import IndexReport


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
    from memlane.engine.journal.indexer import indexer_of

    fresh = memory.internals.fresh
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
    indexer = indexer_of(memory) if embed else indexer_of(memory).lexical_only()
    plan = indexer.plan_files(sources)
    embeds = embed and memory.config.embedding.provider != "none"
    if embeds and char_limit is not None and plan.embedding_chars > char_limit:
        fresh.left_to_indexer()
        return None
    report = indexer.apply(plan, "catch-up")
    fresh.indexed(written_upto, sources)
    fresh.note(plan.changed_since())
    memory.embedding.note_unembedded(report, indexer.embedder_problem)
    if plan.sources:
        fresh.caught_up(report, len(plan.sources), (time.perf_counter() - started) * 1000)
    return report


def catch_up_before_search(memory: ProjectMemory, *, embed: bool = True) -> list[str]:
    """``catch_up`` within the handle's limit; a failure is a notice, never a failed search."""
    from memlane.index.protocol import IndexBusyError

    try:
        report = catch_up(memory, memory.internals.catch_up_char_limit, embed=embed)
    except IndexBusyError as exc:
        # Locked past the read's wait budget: the writes stay noted (and in
        # the markdown) for the next search or index run.
        memory.internals.fresh.failed()
        from memlane.engine.lock_waits import newest_not_indexed

        return [newest_not_indexed(exc)]
    except MemlaneError as exc:
        memory.internals.fresh.failed()
        return [f"the newest memories may be missing: indexing them failed ({exc.message})"]
    return list(report.notices) if report is not None else []


#: The most markdown (bytes on disk) that other processes changed which a
#: session's search indexes itself before its start's index run is done; more
#: is the index run's work, and the search says that memory is catching up.
#: Indexed for the lexical leg only (no model) this costs about 0.35 ms per KB
#: on 2 busy cores (benchmarks/bench_outside.py): at most ~0.1 s on a search.
OUTSIDE_CATCH_UP_BYTES = 256_000
#: Of that, how much text the same search may embed too, when the model is
#: ready: about one or two notes' worth (fresh.py's measurements).
OUTSIDE_EMBED_CHARS = 2000
#: Said when what other tools wrote is more than a search indexes itself.
OUTSIDE_CATCHING_UP = (
    "memory is still catching up with what other tools wrote since this project was "
    "last indexed ({files}): it may be missing from these results until the session's "
    "index run is done; search again in a moment (memory_status shows the index state)"
)


def catch_up_outside(memory: ProjectMemory, *, embed: bool = True) -> tuple[list[str], bool]:
    """``outside_writes``; a failure is a notice, never a failed search."""
    from memlane.engine.lock_waits import newest_not_indexed
    from memlane.index.protocol import IndexBusyError

    try:
        return outside_writes(memory, embed=embed)
    except IndexBusyError as exc:
        memory.internals.fresh.failed()
        return [newest_not_indexed(exc)], False
    except MemlaneError as exc:
        memory.internals.fresh.failed()
        return [f"what other tools wrote may be missing: indexing it failed ({exc.message})"], False


def outside_writes(memory: ProjectMemory, *, embed: bool = True) -> tuple[list[str], bool]:
    """A session's search before its start's index run is done: index the store
    files that changed on disk since the index recorded them (``memlane write``
    from a terminal, another agent's capture, an edit), so its first search sees
    what other tools wrote before the session started.

    A stat per file of the store and one read of the index's file records;
    then, within ``OUTSIDE_CATCH_UP_BYTES``, a read of each changed file and its
    chunks stored for the lexical leg (embedded too when the model is ready and
    they are short; otherwise the index run embeds them). Returns the notices
    and whether the store was compared and everything that changed is now
    searchable.
    """
    from memlane.engine.journal.indexer import indexer_of
    from memlane.store.layout import scan_markdown_files

    store = memory.scope.store
    if not store.is_dir():
        return [], False  # nothing to compare: whatever else runs says what it does
    started = time.perf_counter()
    index = memory.index
    recorded = index.files()
    scan = scan_markdown_files(store)
    changed: list[str] = []
    size = 0
    for path in scan.files:
        try:
            st = path.stat()
        except OSError:
            continue
        known = recorded.pop(str(path), None)
        if known is None or (known.mtime_ns, known.size) != (st.st_mtime_ns, st.st_size):
            changed.append(str(path))
            size += st.st_size
    changed += list(recorded)  # recorded but gone from disk: they leave the index
    if not changed:
        return [], True
    if size > OUTSIDE_CATCH_UP_BYTES:
        memory.internals.fresh.left_to_indexer()
        return [OUTSIDE_CATCHING_UP.format(files=_files(len(changed)))], False
    indexer = indexer_of(memory)
    plan = indexer.plan_files(changed)
    if not embed or plan.embedding_chars > OUTSIDE_EMBED_CHARS:
        indexer = indexer.lexical_only()
    report = indexer.apply(plan, "catch-up")
    memory.internals.fresh.note(plan.changed_since())
    if plan.sources:
        memory.internals.fresh.caught_up(
            report, len(plan.sources), (time.perf_counter() - started) * 1000
        )
    return list(report.notices), True


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"
