"""The doctor's report (``memlane status``, ``memory_status``): every part of a project's memory.

It answers whatever state the parts are in: an index that cannot be opened,
a missing store, damaged lines, an embedder that fails — each becomes a line
of what is missing, with what to do, never a failure of the report itself.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError, MemlaneError
from memlane.engine.lock_waits import bounded_read
from memlane.engine.shared.results import Status

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory


#: How long status waits to connect to an embedding endpoint no call has reached yet.
ENDPOINT_PROBE_S = 0.5


@bounded_read  # a part another process keeps locked is reported, not waited for
def project_status(
    memory: ProjectMemory, *, probe: bool = False, host_llm: bool = False, host: str | None = None
) -> Status:
    """The doctor's report. ``probe`` loads the embedder to see that it works;
    ``host`` is a live session's host (what ``llm.provider = auto`` means there)."""
    import sqlite3

    from memlane.core.version import __version__
    from memlane.engine.journal import capture_log, capture_recovery
    from memlane.index import state
    from memlane.index.backends import backend_of
    from memlane.llm.factory import describe_llm

    # The doctor answers whatever state the index is in: a read-only or
    # full index disk is a problem to report, not a reason to fail.
    index_uri = f"sqlite://{memory.internals.index_path}"
    index_problem: str | None = None
    stats: dict[str, Any] = {}
    health: dict[str, Any] = {}
    try:
        index_uri = memory.index.uri
        stats = memory.index.stats()
    except (MemlaneError, sqlite3.Error, OSError) as exc:
        index_problem = _index_problem(exc, memory.internals.index_path)
    backend = backend_of(memory.config.index)
    health = backend.health(lambda: memory.index, memory.collection, index_problem)
    versions = {
        "memlane": __version__,
        "python": sys.version.split()[0],
        "sqlite": _sqlite_version(),
    }
    problems = memory.config.problems
    notices = [n for n in memory.notices if n not in problems]
    departure = memory.clock.departure()
    if departure:
        notices.append(f"clock: {departure}")
    missing: list[str] = [f"config: {p}" for p in problems]
    if index_problem:
        missing.append(index_problem)
    state_data = state.load(memory.scope.state_path)
    if memory.scope.state_path is not None and not state_data:
        notices.append("index: no state recorded yet (it is written by the next index)")
    model_state = memory.internals.parts.embedder_state
    problem: str | None = None
    provider = memory.config.embedding.provider
    if probe and provider != "none":
        embedder = memory.embedding.embedder
        problem = model_state.embedder_problem
        if embedder is not None:
            try:
                embedder.embed_query("memlane status probe")
            except EmbedderError as exc:
                problem = exc.message
    elif provider != "none":
        # The truth, cheaply: the last real call's failure (a reloaded embedder
        # object says nothing about its endpoint), else, for an endpoint no call
        # has reached yet, a bounded connect to it.
        problem = model_state.recent_failure
        if problem is None and provider == "openai" and not model_state.outcome_known:
            from memlane.embed.http import unreachable

            problem = unreachable(memory.config.embedding, ENDPOINT_PROBE_S)
    if model_state.embedder_loaded or problem:
        problem = problem or (None if model_state.embedder else model_state.embedder_problem)
        embedder_state = f"unavailable: {problem}" if problem else "ready"
        if problem and memory.config.embedding.provider != "none":
            missing.append(
                f"embedder: {problem} — search falls back to BM25; fix "
                "embedding.* (`memlane config list`) or set embedding.provider none"
            )
    else:
        embedder_state = f"{memory.config.embedding.provider} (loads on first search)"
    from memlane.store.damage import damage_in
    from memlane.store.layout import list_markdown_files
    from memlane.store.safe_paths import store_root_problem

    refused = store_root_problem(memory.scope.store)
    if refused:
        missing.append(f"store: {refused}")
    elif not memory.scope.store.is_dir():
        missing.append(
            f"store: {memory.scope.store} does not exist yet — it is created by the first "
            "capture or `memlane write`"
        )
    failed = state_data.get("failed_files") or []
    if failed:
        missing.append(
            f"index: {len(failed)} file(s) could not be indexed (listed below); fix them "
            "and run `memlane index`"
        )
    # A refused store is not read at all (its files may be anyone's).
    damaged = (
        [] if refused else damage_in(memory.scope.store, list_markdown_files(memory.scope.store))
    )
    if damaged:
        files = len({line.path for line in damaged})
        missing.append(
            f"store: {len(damaged)} damaged line(s) in {files} file(s) are left out of "
            "search (listed below; their intact entries are indexed); "
            "`memlane status --fix` moves them into <file>.damaged"
        )
    chunks = int(stats.get("chunks", 0))
    vectors = int(stats.get("vectors", 0))
    if vectors < chunks and memory.config.embedding.provider != "none":
        missing.append(
            f"vectors: {chunks - vectors} chunk(s) have no vector yet (lexical only); "
            "`memlane index` embeds them once the embedder works"
        )
    if backend.without_embedder and memory.config.embedding.provider == "none":
        missing.append(f"index: {backend.without_embedder}")
    session = memory.config.session
    llm_line = describe_llm(memory.config.llm, host_available=host_llm, host=host)
    if "not usable" in llm_line:
        missing.append(f"llm: {llm_line}")
    llm_budget = _llm_budget(memory)
    if llm_budget and llm_budget.get("reached"):
        from memlane.llm.budget import exhausted_notice

        notices.append(exhausted_notice(llm_budget["reached"]))
    sessions_stats = _sessions_stats_of(memory) if memory.config.sessions.enabled else None
    if not refused and memory.scope.store.is_dir():
        from memlane.engine.topics.dream import pending_recovery

        interrupted = pending_recovery(memory.scope.store)
        if interrupted:
            missing.append(f"topics: {interrupted}")
    calibration = None
    if memory.config.embedding.provider.strip().lower() != "none":
        calibration = memory.internals.model_scale.to_json()
        if memory.internals.model_scale.source == "none":
            missing.append(
                "calibration: search scores are calibrated for the bundled model, not for "
                f"{memory.config.embedding.model}: its confidence bands may be far off until "
                "`memlane calibrate` measures it (one embedding call; the next index run "
                "does it too)"
            )
    from memlane.engine import warm_engine

    return Status(
        calibration=calibration,
        topics=None if refused else _topics_of(memory),
        hooks=warm_engine.summary(),
        engine=warm_engine.engine_info(memory.clock.now().timestamp()),
        sessions=sessions_stats,
        versions=versions,
        scope={**memory.scope.to_json(), "collection": memory.collection, **_checkouts(memory)},
        backend=memory.config.index.backend,
        index_uri=index_uri,
        index_health=health,
        model=memory.embedding.model,
        embedder=embedder_state,
        chunks=chunks,
        vectors=vectors,
        files=int(stats.get("files", 0)),
        state_path=str(memory.scope.state_path) if memory.scope.state_path else None,
        state=state_data,
        damaged=damaged,
        notices=notices,
        missing=missing,
        config=memory.config.changed(),
        state_note=memory.scope.state_dir_note,
        store_link=memory.scope.store_link_note,
        capture={
            "enabled": session.capture_enabled,
            "llm": llm_line,
            "journal": capture_recovery.summary(capture_log.capture_log_dir(memory.scope)),
        },
        llm_budget=llm_budget,
        auto_context={
            "enabled": session.auto_context_enabled,
            "top_k": session.auto_context_top_k,
            "score_floor": session.auto_context_score_floor,
            "char_budget": session.auto_context_char_budget,
            "cap_ms": session.auto_context_cap_ms,
        },
    )


def _llm_budget(memory: ProjectMemory) -> dict[str, Any] | None:
    """Today's LLM counters against ``llm.daily_*``; None when the config cannot say."""
    from memlane.llm.budget import Ledger, Limits, budget_report

    try:
        settings = memory.config.llm
    except MemlaneError:  # the llm line reports what is wrong with the config
        return None
    if settings.daily_calls < 0 or settings.daily_tokens < 0:
        return None  # not usable: the llm line says so
    limits = Limits(calls=settings.daily_calls, tokens=settings.daily_tokens)
    return budget_report(limits, Ledger(clock=memory.clock))


def _index_problem(exc: BaseException, path: Path) -> str:
    """One line for status: why the index cannot be opened and what to do."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (
            f"index: {path.parent} is not writable ({exc.strerror}), so the index cannot be "
            "opened or updated — make it writable, or set MEMLANE_HOME (or index.uri) to a "
            "writable directory; your memory files are not affected"
        )
    if isinstance(exc, MemlaneError):
        text = exc.message
        hint = exc.hint or "`memlane reindex` rebuilds it from markdown once the cause is fixed"
    else:
        text = getattr(exc, "strerror", None) or str(exc)
        hint = "`memlane reindex` rebuilds it from markdown once the cause is fixed"
    return f"index: {text} — {hint}"


def _topics_of(memory: ProjectMemory) -> dict[str, Any] | None:
    """The topic memory's overview (engine/topics/overview.py); None when unreadable."""
    from memlane.engine.topics.overview import topic_overview

    try:
        return topic_overview(memory).to_json()
    except (MemlaneError, OSError, ValueError):
        return None  # a damaged topic file is the topic commands' to report


def _sessions_stats_of(memory: ProjectMemory) -> dict[str, Any] | None:
    import sqlite3

    from memlane.engine.sessions.registry import open_store, sessions_path

    if not sessions_path(memory).exists():
        return None  # never created by a status call
    try:
        return open_store(memory).stats()
    except (MemlaneError, sqlite3.Error, OSError):
        # The doctor must answer whatever state the derived sessions file is
        # in. Damage is moved aside and rebuilt by the store (or raised as
        # IndexCorruptError), busy is IndexBusyError; the rest (unreadable
        # directory, I/O error) must not take `memlane status` down either.
        return None


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def _checkouts(memory: ProjectMemory) -> dict[str, list[str]]:
    """Every checkout of the repository that shares this memory, when there is more
    than one (ADR 0035): what the main checkout's status says about its worktrees."""
    from memlane.core.scope import shared_checkouts

    found = shared_checkouts(memory.scope, memory.config.get("scope.worktrees"))
    return {"shared_by": [str(p) for p in found]} if len(found) > 1 else {}
