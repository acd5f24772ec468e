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
        assert session.extraction.enabled and session.internals.surfacer is not None
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        with pytest.raises(MemlaneError, match="switched off"):
            tools.call("memory_topic", ADD)
        assert not session.extraction.enabled and session.internals.surfacer is None
        assert not session.surfacing.enabled
        text = render_status(session.status())
        assert re.search(r"topic memory +off \(topics.enabled, from global\)", text), text

        assert cli("memory", "on", env=LEXICAL).returncode == 0
        added = tools.call("memory_topic", ADD)
        assert added.details["slug"] == "tooling", added.details
        assert session.extraction.enabled and session.internals.surfacer is not None
        assert any("topic memory switched off" in n for n in session.notices)
    finally:
        session.shutdown()


def test_tools_without_a_session_follow_memory_off_and_on(memory: Memory, cli: Cli) -> None:
    """The MCP server's tools have no session (Claude Code's /memory off runs the CLI)."""
    tools = Tools(memory)
    assert cli("memory", "off", env=LEXICAL).returncode == 0
    with pytest.raises(MemlaneError, match="switched off"):
        tools.call("memory_topic", ADD)
    status = tools.call("memory_status", {})
    assert status.details["topics"]["enabled"] is False, status.details["topics"]
    assert cli("memory", "on", env=LEXICAL).returncode == 0
    assert tools.call("memory_topic", ADD).details["slug"] == "tooling"


def test_a_prompt_after_memory_off_surfaces_no_topic(memory: Memory, cli: Cli) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=None)
    tools = Tools(memory, session)
    try:
        tools.call("memory_topic", ADD)
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        session.before_agent_start("how do we install packages, uv or pip?")
        assert session.internals.surfacer is None and session.surfacing.injected == 0
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


def test_every_session_of_one_memory_follows_memory_off(memory: Memory, cli: Cli) -> None:
    """One engine serves several Claude Code sessions of a project on one memory."""
    first = Session.start(memory, host="test", session_id="one", llm=None)
    second = Session.start(memory, host="test", session_id="two", llm=None)
    try:
        assert first.internals.surfacer is not None and second.internals.surfacer is not None
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        first.before_agent_start("how do we install packages?")
        second.before_agent_start("how do we install packages?")
        assert first.internals.surfacer is None and second.internals.surfacer is None
        with pytest.raises(MemlaneError, match="switched off"):
            Tools(memory, second).call("memory_topic", ADD)
    finally:
        first.shutdown()
        second.shutdown()


def test_switching_back_on_keeps_the_sessions_surfacer(
    memory: Memory, cli: Cli, fake_openai: FakeOpenAI
) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=None)
    try:
        surfacer = session.internals.surfacer
        assert surfacer is not None
        surfacer.llm = fake_openai.llm()  # as Session.open sets a rerank model
        assert cli("memory", "off", env=LEXICAL).returncode == 0
        session.before_agent_start("anything")
        assert session.internals.surfacer is None
        assert cli("memory", "on", env=LEXICAL).returncode == 0
        session.before_agent_start("anything")
        assert session.internals.surfacer is surfacer and surfacer.llm is not None
    finally:
        session.shutdown()
