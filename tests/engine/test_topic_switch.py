"""A running session follows ``memlane memory on|off`` (pi's ``/memory on|off``).

The command only edits the global configuration file; the session that is
running in the meantime must stop (and start again) taking topic entries,
extracting and surfacing. Its status report shows pi-memory's overview of
the topic memory.
"""

from __future__ import annotations

import re

import pytest

from fake_llm import FakeOpenAI
from helpers import Cli
from memlane.core.errors import MemlaneError
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.reports import render_status
from memlane.engine.tools.dispatch import Tools

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
ADD = {"action": "add", "topic": "tooling", "title": "Installer", "content": "use uv, not pip"}


def test_memory_off_and_on_reach_the_running_session(
    memory: Memory, cli: Cli, fake_openai: FakeOpenAI
) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=fake_openai.llm())
    tools = Tools(memory, session)
    try:
        assert session.extraction.enabled and session.surfacer is not None
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        with pytest.raises(MemlaneError, match="switched off"):
            tools.call("memory_topic", ADD)
        assert not session.extraction.enabled and session.surfacer is None
        assert not session.surfacing.enabled
        text = render_status(session.status())
        assert re.search(r"topic memory +off \(topics.enabled, from global\)", text), text

        assert cli("memory", "on", env=LEXICAL).returncode == 0
        added = tools.call("memory_topic", ADD)
        assert added.details["slug"] == "tooling", added.details
        assert session.extraction.enabled and session.surfacer is not None
        assert any("topic memory switched off" in n for n in session.notices)
    finally:
        session.shutdown()


def test_a_prompt_after_memory_off_surfaces_no_topic(memory: Memory, cli: Cli) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=None)
    tools = Tools(memory, session)
    try:
        tools.call("memory_topic", ADD)
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        session.before_agent_start("how do we install packages, uv or pip?")
        assert session.surfacer is None and session.surfacing.injected == 0
    finally:
        session.shutdown()


def test_status_shows_the_topic_memory_overview(memory: Memory) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=None)
    try:
        Tools(memory, session).call("memory_topic", ADD)
        report = session.status()
    finally:
        session.shutdown()
    topics = report.to_json()["topics"]
    assert topics["enabled"] is True and topics["topic_files"] == ["tooling.md"]
    assert topics["directory"] == str(memory.scope.store / "topics")
    assert topics["last_dream"] is None
    text = render_status(report)
    for line in (
        r"topic memory +on \(topics.enabled, from default\)",
        rf"topic directory +{re.escape(str(memory.scope.store / 'topics'))}",
        r"MEMORY.md +1/200 lines",
        r"topic files +1 \(1 entries\): tooling.md",
        r"last dream +never",
    ):
        assert re.search(line, text), (line, text)
