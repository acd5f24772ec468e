"""Fresh writes are findable: a search in a session first indexes what the
session wrote since the last index run (``engine/shared/fresh.py``), so a memory
written a moment ago is found before the debounced index comes; a burst is
still the debounced indexer's work, and nothing is walked when nothing was
written."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import FixedClock, IndexWriteLock, open_memory, wait_for
from memlane.core.types import Anchor
from memlane.engine.journal.indexer import Indexer
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.tools.dispatch import Tools

# Far beyond any test: the debounced index never runs on its own, so what a
# search finds, its catch-up indexed.
NEVER_MS = 3_600_000

OLDER_NOTES = (
    "- the deploy script needs AWS_PROFILE=staging before running",
    "- the team moved the session cache to Redis with 5 minute TTLs",
    "- the flaky login test was caused by a race in the token refresh",
    "- the user prefers pytest fixtures over setUp methods",
)
NEW_NOTE = "Staging deploys now need the release manager's approval first."
NEW_NOTE_QUERY = "who approves a staging deploy? the release manager"


def _seeded(project: Path, clock: FixedClock, *, lexical: bool = True, **env: str) -> Memory:
    """Older notes on other days, indexed, so a stale index has other hits to give."""
    mem = open_memory(project, clock=clock, lexical=lexical, **env)
    for i, note in enumerate(OLDER_NOTES):
        mem.write(note, now=datetime(2026, 11, 20 + i, 9, 0))
    mem.sync()
    return mem


def _session(mem: Memory, **kw: Any) -> Session:
    settings = replace(mem.config.session, **{"index_debounce_ms": NEVER_MS, **kw})
    session = Session.start(mem, host="test", session_id="s1", llm=None, settings=settings)
    assert session.internals.indexer.settle(30)  # the start's own catch-up index is done
    # The session's search worker warms up with a search of its own; run late
    # (a loaded machine), it would index what a test writes before the test's
    # own search does.
    assert session.internals.wait_auto_context_ready(60)
    return session


def _hits(result: Any) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = result.details["hits"]
    return hits


def test_a_memory_write_is_the_first_hit_of_the_next_search(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    session = _session(mem)
    tools = Tools(mem, session)
    runs = session.internals.indexer.state.runs

    tools.call("memory_write", {"text": NEW_NOTE})
    hits = _hits(tools.call("memory_search", {"query": NEW_NOTE_QUERY}))

    assert hits and NEW_NOTE in hits[0]["content"]
    assert session.internals.indexer.state.runs == runs  # the debounced index has not run
    fresh = session.status_json()["fresh_writes"]
    assert fresh["runs"] == 1 and fresh["files"] == 1  # just today's daily file
    assert fresh["chunks"] == 1 and fresh["waiting_files"] == 0
    session.shutdown()


def test_a_topic_add_is_the_first_hit_of_the_next_topic_search(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    session = _session(mem)
    tools = Tools(mem, session)
    tools.call(
        "memory_topic",
        {
            "action": "add",
            "topic": "deploys",
            "title": "Staging deploys are tagged",
            "content": "Every staging deploy is tagged deploy-staging-<date> in git.",
        },
    )
    tools.call(
        "memory_topic",
        {
            "action": "add",
            "topic": "release",
            "title": "Release approval",
            "content": "The release manager approves staging deploys before they start.",
        },
    )
    found = tools.call("memory_topic", {"action": "search", "query": NEW_NOTE_QUERY})
    matches = found.details["matches"]
    assert matches and matches[0]["title"] == "Release approval"
    hits = _hits(tools.call("memory_search", {"query": NEW_NOTE_QUERY, "kind": "topic"}))
    assert hits and "release manager approves" in hits[0]["content"]
    assert session.status_json()["fresh_writes"]["files"] == 2  # the two topic files
    session.shutdown()


def test_a_topic_remove_leaves_the_index_before_the_next_search(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    session = _session(mem)
    tools = Tools(mem, session)
    add = {"action": "add", "topic": "release", "title": "Release approval"}
    tools.call("memory_topic", {**add, "content": "The release manager approves deploys."})
    assert _hits(tools.call("memory_search", {"query": "release manager", "kind": "topic"}))
    tools.call("memory_topic", {"action": "remove", "entry": "Release approval"})
    assert not _hits(tools.call("memory_search", {"query": "release manager", "kind": "topic"}))
    session.shutdown()


def test_a_burst_is_indexed_by_the_debounced_indexer_not_by_the_searches(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    session = _session(mem, index_debounce_ms=300)
    tools = Tools(mem, session)
    runs = session.internals.indexer.state.runs
    for i in range(5):
        tools.call(
            "memory_write", {"text": f"burst note {i}: the quokka service moved to port 90{i}"}
        )
    # How many runs the burst took depends on the pauses between the writes (a
    # loaded machine can pause longer than any debounce); what matters is that
    # the indexer, not a search, indexed all of it.
    wait_for(
        lambda: (
            session.internals.indexer.state.runs > runs and not session.internals.indexer.working
        ),
        what="the debounced index runs",
    )

    hits = _hits(tools.call("memory_search", {"query": "quokka service port", "k": 10}))
    assert len([h for h in hits if "quokka" in h["content"]]) == 5
    # Nothing was left for the search to index, and nothing was scanned.
    fresh = session.status_json()["fresh_writes"]
    assert fresh["runs"] == 0 and fresh["files"] == 0 and fresh["waiting_files"] == 0
    session.shutdown()


def test_searches_with_nothing_written_index_nothing(project: Path, clock: FixedClock) -> None:
    mem = _seeded(project, clock)
    session = _session(mem)
    tools = Tools(mem, session)
    tools.call("memory_write", {"text": NEW_NOTE})
    for _ in range(3):
        assert _hits(tools.call("memory_search", {"query": NEW_NOTE_QUERY}))
    assert session.status_json()["fresh_writes"]["runs"] == 1  # the first search only
    assert mem.internals.catch_up() is None  # nothing waiting: no scan at all
    session.shutdown()


def test_auto_context_finds_a_memory_written_a_moment_ago(project: Path, clock: FixedClock) -> None:
    mem = _seeded(project, clock, lexical=False, MEMLANE_AUTO_CONTEXT="on")
    # A long deadline: this is about what is found, not how fast.
    session = _session(mem, auto_context_cap_ms=30_000)
    assert session.internals.wait_auto_context_ready(60)
    # Written through this process by another agent's session (as the MCP
    # server does): this session's own entries are never injected back.
    other = Anchor(session="other-agent", turn="t1", transcript="none")
    mem.write(NEW_NOTE, other)
    message = session.before_agent_start(NEW_NOTE_QUERY).message
    assert message is not None and "release manager's approval" in message
    assert session.status_json()["fresh_writes"]["files"] == 1
    session.shutdown()


def test_auto_context_leaves_more_than_its_limit_to_the_indexer(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.engine.shared.fresh

    # Less than one note with its context: auto-context leaves every note to the indexer.
    monkeypatch.setattr(memlane.engine.shared.fresh, "AUTO_CONTEXT_CATCH_UP_CHARS", 40)
    mem = _seeded(project, clock, lexical=False, MEMLANE_AUTO_CONTEXT="on")
    session = _session(mem, auto_context_cap_ms=30_000)
    assert session.internals.wait_auto_context_ready(60)
    tools = Tools(mem, session)
    tools.call("memory_write", {"text": NEW_NOTE})
    tools.call("memory_write", {"text": "The staging database moved to port 5433."})

    message = session.before_agent_start(NEW_NOTE_QUERY).message
    assert message is None or "release manager's approval" not in message
    fresh = session.status_json()["fresh_writes"]
    assert fresh["left_to_indexer"] >= 1 and fresh["runs"] == 0 and fresh["waiting_files"] == 1
    # An explicit search has no such limit.
    hits = _hits(tools.call("memory_search", {"query": NEW_NOTE_QUERY}))
    assert hits and NEW_NOTE in hits[0]["content"]
    assert session.status_json()["fresh_writes"]["chunks"] == 2
    session.shutdown()


def test_a_locked_index_costs_the_search_only_the_newest_entry(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.index.sqlite.notes

    monkeypatch.setattr(memlane.index.sqlite.notes, "BUSY_TIMEOUT_S", 0.2)
    mem = _seeded(project, clock)
    session = _session(mem)
    tools = Tools(mem, session)
    tools.call("memory_write", {"text": NEW_NOTE})
    with IndexWriteLock(mem.internals.index_path):
        result = tools.call("memory_search", {"query": "deploy script staging"})
    assert _hits(result)  # the older notes still answer
    assert any("newest memories are not in these results" in n for n in result.details["notices"])
    assert session.status_json()["fresh_writes"]["waiting_files"] == 1  # kept for later
    hits = _hits(tools.call("memory_search", {"query": NEW_NOTE_QUERY}))
    assert hits and NEW_NOTE in hits[0]["content"]
    session.shutdown()


def test_a_full_sync_clears_what_it_covered(memory: Memory) -> None:
    memory.write("- a note the full sync picks up")
    assert memory.internals.fresh.waiting == 1
    memory.sync()
    assert memory.internals.fresh.waiting == 0
    assert memory.internals.catch_up() is None


def test_a_file_changed_while_it_was_indexed_stays_waiting(memory: Memory) -> None:
    entry = memory.write("- the first note of the day")
    indexer = Indexer(memory.scope.store, memory.index, memory.embedding.model, lambda: None)
    plan = indexer.plan_files([entry.path])
    assert plan.sources == [entry.path]
    assert plan.embedding_chars >= len("the first note of the day")
    memory.write("- a second note, written while the first was being indexed")
    indexer.apply(plan, "catch-up")
    assert plan.changed_since() == [entry.path]


def test_the_catch_up_indexes_only_what_the_store_walk_would(memory: Memory) -> None:
    store = memory.scope.store
    indexer = Indexer(store, memory.index, memory.embedding.model, lambda: None)
    daily = str(memory.write("- a journal note").path)
    assert indexer.walk_name(daily) == daily
    assert indexer.walk_name(str(store / "MEMORY.md")) is None
    assert indexer.walk_name(str(store / ".hidden" / "x.md")) is None
    assert indexer.walk_name(str(store / "notes.txt")) is None
    assert indexer.walk_name(str(store.parent / "elsewhere.md")) is None
    outside = store.parent / "outside.md"
    outside.write_text("# outside\n\nnot memory\n", encoding="utf-8")
    (store / "linked.md").symlink_to(outside)
    assert indexer.walk_name(str(store / "linked.md")) is None
    memory.internals.note_written(store / "MEMORY.md", store / "linked.md")
    report = memory.internals.catch_up()
    assert report is not None and report.indexed_files == 1  # the daily file alone
    assert {Path(s) for s in memory.index.files()} == {Path(daily)}


def test_the_next_full_run_records_what_a_catch_up_indexed(memory: Memory) -> None:
    from memlane.index import state

    memory.write("- a first note")
    memory.sync(operation="reindex")
    memory.sync(quiet_when_idle=True)  # idle: the state file still describes the reindex
    assert state.load(memory.scope.state_path)["operation"] == "reindex"

    memory.write("- a second note, caught up before a search")
    assert memory.internals.catch_up() is not None
    assert (
        state.load(memory.scope.state_path)["operation"] == "reindex"
    )  # a catch-up records nothing
    memory.sync(quiet_when_idle=True)  # nothing left to index, but its report is recorded
    recorded = state.load(memory.scope.state_path)
    assert recorded["operation"] == "index" and recorded["status"] == "ok"
