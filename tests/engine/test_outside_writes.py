"""A session's first searches see what other tools wrote before it started
(engine/journal/catch_up.py's ``outside_writes``).

The session's start index run would index a note written from a terminal
(``memlane write``) or by another agent, but it embeds what it indexes, and
the model may still be loading: all of a ``pi -p`` run. Until that run is
done, a search indexes the changed files itself for the lexical leg (within a
budget), or says that memory is catching up. The model here is an
OpenAI-compatible endpoint on 127.0.0.1 that holds every embedding request,
so the start's index run cannot finish while the test searches.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, open_memory, wait_for
from memlane.engine.journal.catch_up import OUTSIDE_CATCH_UP_BYTES
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.recall.notes import INDEX_BUILDING, MODEL_LOADING
from memlane.engine.tools.dispatch import Tools

OLDER_NOTES = (
    "- the deploy script needs AWS_PROFILE=staging before running",
    "- the team moved the session cache to Redis with 5 minute TTLs",
)
OUTSIDE_NOTE = "The staging VPN profile is called ops-tunnel."
QUERY = "staging VPN profile ops-tunnel"
NEVER_MS = 3_600_000  # the debounced index never runs on its own


@pytest.fixture
def held() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        try:
            yield server
        finally:
            server.embeddings_open.set()  # let the held requests end


def _env(server: FakeOpenAI) -> dict[str, str]:
    return {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embedder",
        "MEMLANE_EMBEDDING_TIMEOUT_S": "120",
        "MEMLANE_SESSIONS_ENABLED": "off",
    }


def _indexed_then_written_outside(
    project: Path, clock: FixedClock, server: FakeOpenAI, outside: str = OUTSIDE_NOTE
) -> None:
    """Older notes indexed with vectors; then a note another process wrote,
    not indexed (as ``memlane write`` leaves it); then the model cannot load."""
    writer = open_memory(project, clock=clock, lexical=False, **_env(server))
    for i, note in enumerate(OLDER_NOTES):
        writer.write(note, now=datetime(2026, 11, 20, 9, i))
    writer.sync()
    writer.close()
    terminal = open_memory(project, clock=clock, lexical=False, **_env(server))
    terminal.write(outside)
    terminal.close()
    server.embeddings_open.clear()


def _session(mem: Memory) -> Session:
    settings = replace(mem.config.session, index_debounce_ms=NEVER_MS)
    return Session.start(mem, host="test", session_id="s1", llm=None, settings=settings)


def test_the_first_search_finds_a_note_written_outside_the_session(
    project: Path, clock: FixedClock, held: FakeOpenAI
) -> None:
    _indexed_then_written_outside(project, clock, held)
    mem = open_memory(project, clock=clock, lexical=False, **_env(held))
    session = _session(mem)
    try:
        wait_for(
            lambda: mem.internals.parts.indexing, 30, "the start's index run, held by the embedder"
        )
        assert not session.internals.indexer.state.caught_up
        found = Tools(mem, session).call("memory_search", {"query": QUERY})
        hits = found.details["hits"]
        assert hits and OUTSIDE_NOTE in hits[0]["content"]
        notices = found.details.get("notices", [])
        assert MODEL_LOADING in notices  # lexical while the model loads, said so
        # Everything the index run has not reached was indexed by the search.
        assert INDEX_BUILDING not in notices
        assert session.status_json()["fresh_writes"]["files"] == 1
    finally:
        held.embeddings_open.set()
    assert session.internals.indexer.settle(60)
    assert session.internals.indexer.state.caught_up  # from here on the session's indexer keeps up
    session.shutdown()
    mem.close()


def test_more_than_the_budget_is_left_to_the_index_run_and_said(
    project: Path, clock: FixedClock, held: FakeOpenAI
) -> None:
    line = "- a long imported history line about the staging VPN and its many profiles\n"
    big = "# Imported\n\n" + line * (OUTSIDE_CATCH_UP_BYTES // len(line) + 10)
    _indexed_then_written_outside(project, clock, held)
    mem = open_memory(project, clock=clock, lexical=False, **_env(held))
    (mem.scope.store / "imported.md").write_text(big)
    session = _session(mem)
    try:
        wait_for(
            lambda: mem.internals.parts.indexing, 30, "the start's index run, held by the embedder"
        )
        found = Tools(mem, session).call("memory_search", {"query": QUERY})
        notices = " ".join(found.details.get("notices", []))
        assert "memory is still catching up with what other tools wrote" in notices
        assert "(2 files)" in notices  # the imported file and today's daily file
    finally:
        held.embeddings_open.set()
    assert session.internals.indexer.settle(60)
    session.shutdown()
    mem.close()


def test_once_caught_up_a_search_no_longer_walks_the_store(
    project: Path, clock: FixedClock
) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_SESSIONS_ENABLED="off")
    mem.write(OLDER_NOTES[0])
    session = _session(mem)
    assert session.internals.indexer.settle(30)
    assert session.internals.indexer.state.caught_up
    # The session's search worker warms up with a search of its own, which
    # catches up what it finds written outside if it runs late (a loaded machine).
    assert session.internals.wait_auto_context_ready(60)
    # Written behind the session's back after its start: the debounced index's work.
    other = open_memory(project, clock=clock)
    other.write(OUTSIDE_NOTE)
    other.close()
    before = session.status_json()["fresh_writes"]
    found = Tools(mem, session).call("memory_search", {"query": QUERY})
    assert session.status_json()["fresh_writes"] == before  # no catch-up ran
    assert OUTSIDE_NOTE not in found.text  # not walked for: the index run's work
    session.shutdown()


def test_a_sessions_first_prompt_before_its_start_is_pushed_a_note_written_outside(
    project: Path, clock: FixedClock
) -> None:
    """A hook host starts a new session's index run after its first prompt
    (docs/adr/0047): that prompt's auto-context indexes what others wrote itself."""
    writer = open_memory(project, clock=clock, MEMLANE_SESSIONS_ENABLED="off")
    for i, note in enumerate(OLDER_NOTES):
        writer.write(note, now=datetime(2026, 11, 20, 9, i))
    writer.sync()
    writer.close()
    terminal = open_memory(project, clock=clock)
    # Not indexed, as `memlane write` from a terminal leaves it; older than the
    # snapshot (today and yesterday), which would show it already.
    terminal.write(OUTSIDE_NOTE, now=datetime(2026, 11, 21, 9, 0))
    terminal.close()
    mem = open_memory(
        project, clock=clock, MEMLANE_SESSIONS_ENABLED="off", MEMLANE_AUTO_CONTEXT="on"
    )
    # A long deadline: this is about what is found, not how fast.
    settings = replace(mem.config.session, index_debounce_ms=NEVER_MS, auto_context_cap_ms=30_000)
    session = Session.start(
        mem, host="test", session_id="s1", llm=None, settings=settings, defer_background=True
    )
    message = session.before_agent_start("what is the staging VPN profile called?").message
    assert message is not None and OUTSIDE_NOTE in message, message
    assert not session.internals.indexer.state.caught_up  # no index run has started
    session.shutdown()
    mem.close()
