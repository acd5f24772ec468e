"""A running session follows the settings declared live (engine/live/switch.py).

``memlane config set`` (pi's ``/memory settings``) only edits a configuration
file; a session that is running meanwhile takes a live setting from its
next event (auto-context on or off and its floor, auto-recall, the search
defaults), every session of one memory does (the warm engine shares it),
and a setting that applies from the next session leaves the running one as
it started.
"""

from __future__ import annotations

from datetime import datetime

from helpers import Cli
from memlane.core.config import KEYS
from memlane.engine.live.session import Session
from memlane.engine.live.switch import LIVE_KEYS
from memlane.engine.project import Memory
from memlane.engine.tools.dispatch import Tools

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
PROMPT = "why is the login test flaky? token refresh race"


def _seeded(memory: Memory) -> Memory:
    """Two notes of an earlier day (today's are in the snapshot, never injected again)."""
    memory.write(
        "- the flaky login test was caused by a race in the token refresh",
        now=datetime(2026, 11, 20, 9, 0),
    )
    memory.write("- the team moved the session cache to Redis", now=datetime(2026, 11, 20, 9, 1))
    memory.sync()
    return memory


def _set(cli: Cli, key: str, value: str) -> None:
    assert cli("config", "set", key, value, env=LEXICAL).returncode == 0


def test_the_live_keys_are_the_declared_ones() -> None:
    assert set(LIVE_KEYS) == {name for name, key in KEYS.items() if key.live}
    assert {"auto_context.enabled", "search.top_k", "topics.enabled"} <= set(LIVE_KEYS)
    assert "embedding.model" not in LIVE_KEYS and "capture.enabled" not in LIVE_KEYS


def test_auto_context_switched_on_injects_from_the_next_prompt(memory: Memory, cli: Cli) -> None:
    session = Session.start(_seeded(memory), host="test", session_id="s", llm=None)
    try:
        assert session.before_agent_start(PROMPT).message is None  # off by default
        _set(cli, "auto_context.enabled", "true")
        _set(cli, "auto_context.score_floor", "0.01")
        session.internals.follow_settings()  # what the next event does first
        assert session.internals.wait_auto_context_ready(30)
        message = session.before_agent_start(PROMPT).message
        assert message is not None and "race in the token refresh" in message, message
        assert session.settings.auto_context_score_floor == 0.01
        _set(cli, "auto_context.enabled", "false")
        assert session.before_agent_start(PROMPT).message is None
        assert session.auto_context.injected == 1
    finally:
        session.shutdown()


def test_auto_recall_and_the_search_default_follow(memory: Memory, cli: Cli) -> None:
    session = Session.start(_seeded(memory), host="test", session_id="s", llm=None)
    tools = Tools(memory, session)
    try:
        assert session.recall.mode == "heuristic"
        _set(cli, "sessions.auto_recall", "off")
        _set(cli, "search.top_k", "1")
        hits = tools.call("memory_search", {"query": "login test token refresh redis cache"})
        assert len(hits.details["hits"]) == 1, hits.details
        assert session.recall.mode == "off"
    finally:
        session.shutdown()


def test_every_session_of_one_memory_follows_a_live_setting(memory: Memory, cli: Cli) -> None:
    """One engine serves several sessions of a project on one memory (and configuration)."""
    first = Session.start(memory, host="test", session_id="one", llm=None)
    second = Session.start(memory, host="test", session_id="two", llm=None)
    try:
        _set(cli, "auto_context.enabled", "true")
        first.before_agent_start("anything")
        second.before_agent_start("anything")
        assert first.auto_context.enabled and second.auto_context.enabled
    finally:
        first.shutdown()
        second.shutdown()


def test_a_setting_for_the_next_session_leaves_the_running_one_as_it_started(
    memory: Memory, cli: Cli
) -> None:
    session = Session.start(memory, host="test", session_id="s", llm=None)
    try:
        _set(cli, "capture.enabled", "false")
        _set(cli, "snapshot.today_chars", "10")
        session.before_agent_start("anything")
        assert session.capture.enabled is True
        assert memory.config.get("snapshot.today_chars") == KEYS["snapshot.today_chars"].default
    finally:
        session.shutdown()
