"""The Session with the topic layer: snapshot index, auto-surfacing, extraction, dream nudge."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from helpers import TOPIC_DAY
from memlane.core.config import load_config
from memlane.core.scope import resolve_scope
from memlane.core.types import Exchange
from memlane.engine.extract import SYSTEM_PROMPT as EXTRACT_SYSTEM
from memlane.engine.memory import Memory
from memlane.engine.session import Session
from memlane.store import topics


class TwoJobLLM:
    """Distils with bullets, extracts with a scripted JSON list."""

    name = "scripted/two-jobs"

    def __init__(self, learnings: list[dict[str, str]]) -> None:
        self.learnings = learnings
        self.calls: list[str] = []

    def complete(
        self, system: str, prompt: str, *, max_tokens: int = 800, timeout_s: float | None = None
    ) -> str:
        if system == EXTRACT_SYSTEM:
            self.calls.append("extract")
            return json.dumps(self.learnings)
        self.calls.append("distil")
        return "- the user said they prefer uv over pip for installs"


def _memory(project: Path, **env: str) -> Memory:
    config = load_config(None, env={"MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50", **env})
    return Memory(resolve_scope(project), config)


def _wait(predicate: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_snapshot_carries_memory_md_and_stays_byte_stable(project: Path) -> None:
    mem = _memory(project, MEMLANE_EMBEDDING_PROVIDER="none")
    store = mem.scope.store
    topics.add(
        store,
        content="staging uses port 2222",
        topic="debugging",
        title="SSH port",
        today=TOPIC_DAY,
    )
    session = Session.start(mem, host="test", session_id="s", llm=None)
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


def test_relevant_topics_are_surfaced_once_per_session(project: Path) -> None:
    mem = _memory(project)
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
    assert session.wait_auto_context_ready(60)
    message = session.before_agent_start(
        "how do I run the alembic migrations against the staging postgres database?"
    ).message
    assert message is not None and "topics/database.md" in message
    assert "Fixture style" not in message
    again = session.before_agent_start("and the staging postgres migrations again?").message
    assert again is None or "topics/database.md" not in again  # not injected twice
    assert session.surfacing.injected == 1 and session.surfacing.topics == ["database"]
    session.shutdown()


def test_extraction_writes_durable_learnings_after_capture(project: Path) -> None:
    mem = _memory(project, MEMLANE_EMBEDDING_PROVIDER="none")
    llm = TwoJobLLM(
        [
            {
                "topic": "preferences",
                "title": "Package installs use uv",
                "content": "The user prefers uv over pip for installing Python packages.",
                "type": "user",
            }
        ]
    )
    session = Session.start(mem, host="test", session_id="s", llm=llm)  # type: ignore[arg-type]
    session.agent_settled(
        Exchange(user="install it with uv, never pip", assistant="Done with uv.", entry_id="e1")
    )
    _wait(lambda: session.extraction.runs == 1)
    session.shutdown()
    assert llm.calls == ["distil", "extract"]
    listed = {t.slug: t for t in topics.list_topics(mem.scope.store)}
    assert "preferences" in listed
    assert session.extraction.written == 1
    journal = next(mem.scope.store.glob("2*-*-*.md")).read_text()
    assert "prefer uv over pip" in journal


def test_no_extraction_without_an_llm_or_when_switched_off(project: Path) -> None:
    mem = _memory(
        project, MEMLANE_EMBEDDING_PROVIDER="none", MEMLANE_EXTRACT_MEMORIES_ENABLED="off"
    )
    llm = TwoJobLLM([])
    session = Session.start(mem, host="test", session_id="s", llm=llm)  # type: ignore[arg-type]
    session.agent_settled(Exchange(user="q", assistant="a", entry_id="e1"))
    session.shutdown()
    assert llm.calls == ["distil"] and not session.extraction.enabled


def test_dream_nudge_is_said_once_after_enough_sessions(project: Path) -> None:
    mem = _memory(project, MEMLANE_EMBEDDING_PROVIDER="none")
    mem.write("- something happened", now=datetime(2026, 11, 30, 9, 0))
    said = []
    for number in range(7):
        session = Session.start(mem, host="test", session_id=f"s{number}", llm=None)
        said.append(any("memlane dream" in n for n in session.notices))
        session.shutdown()
    assert said.count(True) == 1


def test_per_task_models_for_surfacing_and_extraction(project: Path) -> None:
    from fake_llm import FakeOpenAI

    with FakeOpenAI(answer="- distilled") as srv:
        mem = _memory(
            project,
            MEMLANE_EMBEDDING_PROVIDER="none",
            MEMLANE_LLM_PROVIDER="openai",
            MEMLANE_LLM_BASE_URL=srv.base_url,
            MEMLANE_LLM_MODEL="cheap-capture",
            MEMLANE_AUTO_SURFACING_MODEL="rerank-model",
            MEMLANE_EXTRACT_MEMORIES_MODEL="extract-model",
        )
        session = Session.open(mem, host="test", session_id="s")
        assert session.llm is not None and session.llm.name.endswith("cheap-capture")
        assert session.surfacer is not None and session.surfacer.llm is not None
        assert session.surfacer.llm.name.endswith("rerank-model")
        assert session.extract_llm is not None and session.extract_llm.name.endswith(
            "extract-model"
        )
        session.shutdown()
