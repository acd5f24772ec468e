"""The Session with the topic layer: snapshot index, auto-surfacing, extraction, dream nudge."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from fake_llm import FakeOpenAI, Request
from helpers import TOPIC_DAY, FixedClock, open_memory, wait_for
from memlane.core.types import Exchange
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.topics.extraction import SYSTEM_PROMPT as EXTRACT_SYSTEM
from memlane.store import topics

DISTILLED = "- the user said they prefer uv over pip for installs"


def two_jobs(learnings: list[dict[str, str]]) -> Callable[[Request], str]:
    """A fake server's responder: bullets for distillation, *learnings* for extraction."""

    def answer(request: Request) -> str:
        return json.dumps(learnings) if request.system == EXTRACT_SYSTEM else DISTILLED

    return answer


def jobs(server: FakeOpenAI) -> list[str]:
    """What the server was asked, in order: "extract" or "distil" per request."""
    return ["extract" if r.system == EXTRACT_SYSTEM else "distil" for r in server.requests]


def test_snapshot_carries_memory_md_and_stays_byte_stable(memory: Memory) -> None:
    store = memory.scope.store
    topics.add(
        store,
        content="staging uses port 2222",
        topic="debugging",
        title="SSH port",
        today=TOPIC_DAY,
    )
    session = Session.start(memory, host="test", session_id="s", llm=None)
    first = session.before_agent_start("hi").system_append
    assert "## Curated topics (MEMORY.md)" in first and "[Debugging](topics/debugging.md)" in first
    topics.add(
        store,
        content="REST handlers live in src/api",
        topic="api",
        title="Handlers",
        today=TOPIC_DAY,
    )
    assert session.before_agent_start("again").system_append == first  # not a checkpoint
    assert "topics/api.md" in session.compacted()
    session.shutdown()


def test_relevant_topics_are_surfaced_once_per_session(project: Path, clock: FixedClock) -> None:
    # The bundled model: surfacing's card evidence is calibrated on it.
    mem = open_memory(project, clock=clock, lexical=False, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50")
    store = mem.scope.store
    topics.add(
        store,
        content="The staging database is PostgreSQL 15 on port 5433; migrations run with alembic.",
        topic="database",
        title="Staging database",
        type="project",
        today=TOPIC_DAY,
    )
    topics.add(
        store,
        content="The user prefers pytest fixtures over setUp methods.",
        topic="testing",
        title="Fixture style",
        type="user",
        today=TOPIC_DAY,
    )
    mem.sync()
    session = Session.start(mem, host="test", session_id="s", llm=None)
    assert session.internals.wait_auto_context_ready(60)
    message = session.before_agent_start(
        "how do I run the alembic migrations against the staging postgres database?"
    ).message
    assert message is not None and "topics/database.md" in message
    assert "Fixture style" not in message
    again = session.before_agent_start("and the staging postgres migrations again?").message
    assert again is None or "topics/database.md" not in again  # not injected twice
    assert session.surfacing.injected == 1 and session.surfacing.topics == ["database"]
    session.shutdown()


def test_extraction_writes_durable_learnings_after_capture(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = two_jobs(
        [
            {
                "topic": "preferences",
                "title": "Package installs use uv",
                "content": "The user prefers uv over pip for installing Python packages.",
                "type": "user",
            }
        ]
    )
    session = Session.start(memory, host="test", session_id="s", llm=fake_openai.llm())
    session.agent_settled(
        Exchange(user="install it with uv, never pip", assistant="Done with uv.", entry_id="e1")
    )
    wait_for(lambda: session.extraction.runs == 1, what="one extraction")
    session.shutdown()
    assert jobs(fake_openai) == ["distil", "extract"]
    assert "install it with uv" in fake_openai.requests[1].prompt  # the exchange, extracted
    listed = {t.slug: t for t in topics.list_topics(memory.scope.store)}
    assert listed["preferences"].titles == ["Package installs use uv"]
    assert session.extraction.written == 1
    journal = (memory.scope.store / f"{TOPIC_DAY.isoformat()}.md").read_text()
    assert "prefer uv over pip" in journal


PREFERENCE = [
    {
        "topic": "preferences",
        "title": "Package installs use uv",
        "content": "The user prefers uv over pip for installing Python packages.",
        "type": "user",
    }
]


def test_a_session_ending_right_after_an_exchange_still_extracts_it(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    """``pi -p``: the process ends as soon as the answer is settled; the
    exchange's learnings reach the topic files within the shutdown cap."""
    fake_openai.responder = two_jobs(PREFERENCE)
    session = Session.start(memory, host="test", session_id="s", llm=fake_openai.llm())
    session.agent_settled(
        Exchange(user="install it with uv, never pip", assistant="Done with uv.", entry_id="e1")
    )
    flush = session.shutdown()  # at once: distillation and extraction have not run yet
    assert flush.flushed
    assert jobs(fake_openai) == ["distil", "extract"]
    assert session.extraction.runs == 1 and session.extraction.written == 1
    listed = {t.slug: t for t in topics.list_topics(memory.scope.store)}
    assert listed["preferences"].titles == ["Package installs use uv"]
    # ... and it is indexed before the session ends
    hits = memory.search("uv over pip", 5, kind="topic", min_score=0.0).hits
    assert any("topics/preferences.md" in hit.source for hit in hits)


def test_an_extraction_that_cannot_finish_within_the_cap_is_given_up(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    release = threading.Event()
    extract_answer = two_jobs(PREFERENCE)

    def answer(request: Request) -> str:
        if request.system == EXTRACT_SYSTEM:
            release.wait(30)  # far beyond the cap below
        return extract_answer(request)

    fake_openai.responder = answer
    session = Session.start(memory, host="test", session_id="s", llm=fake_openai.llm())
    session.agent_settled(Exchange(user="use uv", assistant="Done with uv.", entry_id="e1"))
    try:
        flush = session.shutdown(cap_ms=2000)
    finally:
        release.set()
    assert flush.flushed  # the journal entry was written; the extraction is an extra
    assert session.extraction.written == 0
    assert session.extraction.failed == 1 and "timed out" in (session.extraction.last_error or "")
    assert topics.list_topics(memory.scope.store) == []


def test_a_distillation_written_as_a_digest_at_shutdown_leaves_nothing_to_extract(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    """Shutdown writes a still-distilling exchange as a digest: there is no
    extraction left to wait for, and none is counted as abandoned."""
    release = threading.Event()

    def answer(request: Request) -> str:
        release.wait(30)  # the distillation never answers within the cap
        return two_jobs(PREFERENCE)(request)

    fake_openai.responder = answer
    session = Session.start(memory, host="test", session_id="s", llm=fake_openai.llm())
    session.agent_settled(Exchange(user="use uv", assistant="Done with uv.", entry_id="e1"))
    try:
        flush = session.shutdown(cap_ms=2000)
    finally:
        release.set()
    assert flush.flushed
    assert session.extraction.abandoned == 0 and session.extraction.runs == 0
    assert topics.list_topics(memory.scope.store) == []


def test_no_extraction_without_an_llm_or_when_switched_off(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = two_jobs([])
    mem = open_memory(project, clock=clock, MEMLANE_EXTRACT_MEMORIES_ENABLED="off")
    session = Session.start(mem, host="test", session_id="s", llm=fake_openai.llm())
    session.agent_settled(Exchange(user="q", assistant="a", entry_id="e1"))
    session.shutdown()
    assert jobs(fake_openai) == ["distil"] and not session.extraction.enabled
    without = Session.start(mem, host="test", session_id="s2", llm=None)
    assert not without.extraction.enabled
    without.shutdown()


def test_dream_nudge_is_said_once_after_enough_sessions(memory: Memory) -> None:
    memory.write("- something happened", now=datetime(2026, 11, 30, 9, 0))
    said = []
    for number in range(7):
        session = Session.start(memory, host="test", session_id=f"s{number}", llm=None)
        said.append(any("memlane dream" in n for n in session.notices))
        session.shutdown()
    assert said.count(True) == 1


def test_per_task_models_for_surfacing_and_extraction(project: Path, clock: FixedClock) -> None:
    with FakeOpenAI(answer="- distilled") as srv:
        mem = open_memory(
            project,
            clock=clock,
            MEMLANE_LLM_PROVIDER="openai",
            MEMLANE_LLM_BASE_URL=srv.base_url,
            MEMLANE_LLM_MODEL="cheap-capture",
            MEMLANE_AUTO_SURFACING_MODEL="rerank-model",
            MEMLANE_EXTRACT_MEMORIES_MODEL="extract-model",
        )
        session = Session.open(mem, host="test", session_id="s")
        assert session.llm is not None and session.llm.name.endswith("cheap-capture")
        assert session.internals.surfacer is not None and session.internals.surfacer.llm is not None
        assert session.internals.surfacer.llm.name.endswith("rerank-model")
        assert (
            session.internals.extract_llm is not None
            and session.internals.extract_llm.name.endswith("extract-model")
        )
        session.shutdown()
