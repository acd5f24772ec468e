"""Auto-context, topic surfacing and auto-recall while the embedding model still loads.

A ``pi -p`` run is over before the model is warm (about 1.5 s with the
bundled one). Instead of skipping those prompts, the session answers them
from the lexical (BM25) leg, within the same deadline and on the lexical
search's own calibrated score scale (docs/adr/0019). The model here is an
OpenAI-compatible endpoint on 127.0.0.1 that holds every embedding request
for the whole test: anything that waited for it would miss the deadline and
inject nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import TOPIC_DAY, FixedClock, open_memory, start_session
from memlane.engine.project import Memory
from memlane.store import topics

NOTES = [
    "- the team moved the session cache to Redis with 5 minute TTLs",
    "- the deploy script needs AWS_PROFILE=staging before running",
    "- the flaky login test was caused by a race in the token refresh",
    "- the user prefers pytest fixtures over setUp methods",
]


@pytest.fixture
def held() -> Iterator[FakeOpenAI]:
    """An embedding endpoint; ``embeddings_open`` is cleared once the store is indexed."""
    with FakeOpenAI() as server:
        try:
            yield server
        finally:
            server.embeddings_open.set()  # let the held warm-up requests end


def _loading(project: Path, clock: FixedClock, server: FakeOpenAI, **env: str) -> Memory:
    """The store indexed with the endpoint's vectors, then a fresh memory of it
    whose model cannot load: every embedding request is held from now on."""
    settings = {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embedder",
        "MEMLANE_EMBEDDING_TIMEOUT_S": "120",
        "MEMLANE_AUTO_CONTEXT": "on",
        **env,
    }
    writer = open_memory(project, clock=clock, lexical=False, **settings)
    for i, note in enumerate(NOTES):
        writer.write(note, now=datetime(2026, 11, 20, 9, i))
    topics.add(
        writer.scope.store,
        content="The staging database is PostgreSQL 15 on port 5433; migrations run with alembic.",
        topic="database",
        title="Staging database",
        type="project",
        today=TOPIC_DAY,
    )
    writer.sync()
    writer.close()
    server.embeddings_open.clear()
    return open_memory(project, clock=clock, lexical=False, **settings)


def test_prompts_get_lexical_hits_while_the_model_loads(
    project: Path, clock: FixedClock, held: FakeOpenAI
) -> None:
    mem = _loading(project, clock, held, MEMLANE_AUTO_SURFACING_ENABLED="off")
    session = start_session(mem)
    try:
        injection = session.before_agent_start("why is the login test flaky? token refresh race")
        assert injection.message is not None
        assert "race in the token refresh" in injection.message
        assert not session.internals.wait_auto_context_ready(0)  # the model is still loading
        state = session.auto_context
        assert state.injected == 1 and state.lexicalWhileWarming == 1
        assert state.skippedWarming == 0 and state.skippedBudget == 0

        # The same floor: an unrelated prompt brings nothing.
        assert session.before_agent_start("quantum chromodynamics lattice gauge").message is None
        assert state.skippedEmpty == 1 and state.lexicalWhileWarming == 2
        assert state.consecutive_misses == 0  # nothing counted against the warming worker
    finally:
        held.embeddings_open.set()
        session.shutdown()


def test_topics_are_surfaced_from_the_lexical_leg_while_the_model_loads(
    project: Path, clock: FixedClock, held: FakeOpenAI
) -> None:
    mem = _loading(project, clock, held, MEMLANE_AUTO_CONTEXT="off")
    session = start_session(mem)
    try:
        message = session.before_agent_start(
            "how do I run the alembic migrations against the staging postgres database?"
        ).message
        assert message is not None and "topics/database.md" in message
        assert session.surfacing.injected == 1 and session.surfacing.lexical_while_warming == 1
        assert session.surfacing.skipped_budget == 0
    finally:
        held.embeddings_open.set()
        session.shutdown()


def test_status_text_shows_the_warming_counters(
    project: Path, clock: FixedClock, held: FakeOpenAI
) -> None:
    from memlane.engine.reports import render_status

    mem = _loading(project, clock, held, MEMLANE_AUTO_SURFACING_ENABLED="off")
    session = start_session(mem)
    try:
        session.before_agent_start("the deploy script and AWS_PROFILE staging")
        report = session.status()
    finally:
        held.embeddings_open.set()
        session.shutdown()
    text = render_status(report)
    assert "skippedWarming 0" in text and "lexicalWhileWarming 1" in text
