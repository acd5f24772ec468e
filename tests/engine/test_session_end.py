"""A session's end in a process that outlives it (the warm engine), and searches meanwhile.

The host is released as soon as it is no longer needed (captures written),
before the index settles; what the index has not done by the cap is drained
afterwards instead of dropped, so a first session's entries become
searchable; a search while an index run is under way says so, and one while
the model loads answers from the lexical leg at once and says so. The embedding
endpoint is a fake server on 127.0.0.1 that holds every request until the
test opens it: an index that cannot finish until then, proven by what the
calls returned while it was held, never by timing them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, open_memory, start_session, wait_for
from memlane.core.types import Exchange
from memlane.engine.live.state import Flush
from memlane.engine.project import Memory
from memlane.engine.recall.notes import INDEX_BUILDING, MODEL_LOADING
from memlane.engine.tools.dispatch import Tools

HELD_S = 120.0  # how long an embedding request may wait for the test to open the server


@pytest.fixture
def embedder() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def held_memory(project: Path, clock: FixedClock, embedder: FakeOpenAI) -> Iterator[Memory]:
    embedder.embeddings_open.clear()
    mem = open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=embedder.base_url,
        MEMLANE_EMBEDDING_MODEL="fake-embedder",
        MEMLANE_EMBEDDING_TIMEOUT_S=str(HELD_S),
        MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50",
        MEMLANE_SESSIONS_ENABLED="off",
    )
    try:
        yield mem
    finally:
        embedder.embeddings_open.set()
        mem.close()


def _state(mem: Memory) -> dict[str, object]:
    path = mem.scope.state_path
    assert path is not None
    return json.loads(path.read_text()) if path.exists() else {}


def test_the_host_is_released_before_the_index_settles_and_the_index_is_drained(
    held_memory: Memory, embedder: FakeOpenAI
) -> None:
    session = start_session(held_memory)  # no LLM: the exchange is written as a digest
    exchange = Exchange(
        user="which queue does the mailer use?", assistant="SQS, with a dead-letter queue."
    )
    assert session.agent_settled(exchange).queued
    released: list[Flush] = []
    flush = session.shutdown(cap_ms=1000, host_released=released.append, drain_index=True)
    # The capture was written before the host was let go; the index could not
    # settle (its embeddings are held), so it goes on after the cap.
    assert released == [Flush(flushed=True, pending=0)]
    assert flush == Flush(flushed=False, pending=0)
    assert session.internals.working, "the index run was dropped at the cap"
    assert _state(held_memory).get("status") == "running"
    # A write after the end (an extraction that finished late) is indexed too.
    held_memory.write("the mailer retries five times before the dead-letter queue")
    session.internals.note_write()
    embedder.embeddings_open.set()
    wait_for(lambda: not session.internals.working, HELD_S, "the drained index runs")
    assert _state(held_memory)["status"] == "ok"
    # The run under way at the cap, then the one the late write asked for.
    assert (
        session.internals.indexer.state.runs == 2
        and session.internals.indexer.state.last_error is None
    )
    hits = held_memory.search("which queue does the mailer use", 3, sync=False).hits
    assert any("SQS" in hit.content for hit in hits)


def test_a_search_while_the_index_is_being_built_says_so(memory: Memory) -> None:
    session = start_session(memory)
    tools = Tools(memory, session)
    try:
        with (
            memory.internals.parts.index_run()
        ):  # an index run under way (a first session's catch-up)
            during = tools.call("memory_search", {"query": "the mailer queue"}).text
        after = tools.call("memory_search", {"query": "the mailer queue"}).text
    finally:
        session.shutdown()
    assert during.startswith("No memories match 'the mailer queue'")
    assert f"note: {INDEX_BUILDING}" in during
    assert INDEX_BUILDING not in after


def test_a_search_while_the_model_loads_answers_lexically_at_once_and_says_so(
    held_memory: Memory, embedder: FakeOpenAI
) -> None:
    session = start_session(held_memory)  # its warm-up waits on the held endpoint
    tools = Tools(held_memory, session)
    try:
        wrote = tools.call("memory_write", {"text": "the mailer uses SQS with a dead-letter queue"})
        assert "Saved to" in wrote.text
        wait_for(
            lambda: held_memory.internals.parts.embedder_state.loading_now,
            HELD_S,
            "the model's warm-up",
        )
        # Answered while the endpoint still holds every embedding: it never waited for one.
        found = tools.call("memory_search", {"query": "which queue does the mailer use"})
        assert "(lexical search)" in found.text and f"note: {MODEL_LOADING}" in found.text
        assert "SQS" in found.text, found.text
    finally:
        embedder.embeddings_open.set()
        session.shutdown()
    # Once the model answers, the chunk stored for the lexical leg gets its vector.
    assert held_memory.index.missing_vectors(limit=1) == []
