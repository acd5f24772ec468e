"""Past sessions other agents wrote are searchable from a session's first search
(engine/sessions/catch_up.py, the sweeper's ``wake``).

The warm engine keeps one sessions layer per project; its sweeper backs off to
minutes while the project is idle, so a Claude Code transcript that appeared
between two pi sessions waited for the next tick. A session's start now wakes
the sweeper, and until that sweep is done a search of past messages reads the
new bytes itself (few of them) or says past sessions are still being read.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from _fixtures import ClaudeSession, PiSession, Project, chat

from helpers import FixedClock, open_memory, wait_for
from memlane.engine.live.background import Background
from memlane.engine.live.session import Session
from memlane.engine.sessions.catch_up import OUTSIDE_TRANSCRIPT_BYTES, catch_up_transcripts
from memlane.engine.sessions.layer import SessionsLayer
from memlane.engine.tools.dispatch import Tools

NEW_QUESTION = "why does the billing webhook retry three times?"
NEW_ANSWER = "Because Stripe's idempotency window covers three attempts."
IDLE = {"MEMLANE_SESSIONS_SWEEP_INTERVAL_MS": "3600000"}  # a sweeper idle for an hour


def _old_session(agent_project: Project) -> None:
    old = PiSession("old-pi")
    chat(old, 2, topic="redis cache")
    old.write(agent_project.pi_file())


def _claude_appears(agent_project: Project, name: str = "new-cc.jsonl") -> None:
    cc = ClaudeSession("new-cc")
    cc.turn_21(NEW_QUESTION, NEW_ANSWER)
    cc.write(agent_project.claude_file(name))


def test_a_transcript_that_appeared_is_read_by_the_search_itself(
    agent_project: Project, clock: FixedClock
) -> None:
    _old_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    layer = SessionsLayer(mem)
    layer.backfill()
    _claude_appears(agent_project)
    assert not layer.search("billing webhook retry", mode="lexical").hits

    assert catch_up_transcripts(mem) == []
    hits = layer.search("billing webhook retry", mode="lexical").hits
    assert hits and hits[0].text == NEW_QUESTION and hits[0].session_id == "new-cc"
    count = layer.stats()["documents"]
    assert catch_up_transcripts(mem) == []  # nothing new: nothing read twice
    assert layer.stats()["documents"] == count


def test_more_new_bytes_than_the_budget_is_said_not_read(
    agent_project: Project, clock: FixedClock
) -> None:
    mem = open_memory(agent_project.root, clock=clock)
    SessionsLayer(mem).backfill()
    big = PiSession("huge")
    text = "a long pasted log line " * 200
    while len(big.text()) <= OUTSIDE_TRANSCRIPT_BYTES:
        big.user(text)
        big.assistant("noted")
    big.write(agent_project.pi_file("huge.jsonl"))
    (said,) = catch_up_transcripts(mem)
    assert said.startswith("past sessions are still being read (1 transcript changed")


@pytest.mark.parametrize("deferred", [False, True], ids=["started", "start-deferred"])
def test_a_session_start_wakes_the_idle_sweeper_and_its_first_search_sees_the_transcript(
    agent_project: Project, clock: FixedClock, deferred: bool
) -> None:
    """``start-deferred``: a hook host starts a session's background after its
    first prompt (docs/adr/0047); until then nothing woke the sweeper, so the
    session counts as catching up and its search reads the transcript itself."""
    _old_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock, **IDLE)
    # The project's own background, as the warm engine keeps it between sessions.
    background = Background(mem.fork()).start()
    wait_for(lambda: not background.catching_up, 30, "the first backfill")
    layer = background.sessions_layer
    assert layer is not None
    _claude_appears(agent_project)

    settings = replace(mem.config.session, index_debounce_ms=3_600_000)
    session = Session.start(
        mem,
        host="test",
        session_id="s1",
        llm=None,
        settings=settings,
        background=background,
        defer_background=deferred,
    )
    if deferred:
        assert session.internals.sessions_catching_up  # nothing asked for a sweep yet
    found = Tools(mem, session).call(
        "memory_search", {"query": "billing webhook retry", "kind": "session", "mode": "lexical"}
    )
    assert NEW_QUESTION in found.text and "session:new-cc" in found.text, found.text
    if deferred:
        session.internals.start_background()
    # The woken sweep runs now, not in an hour.
    wait_for(
        lambda: not session.internals.sessions_catching_up,
        30,
        "the sweep the session's start asked for",
    )
    session.shutdown()
    background.stop()
    layer.close()


def test_wake_sweeps_at_once_only_while_the_sweeper_runs(
    agent_project: Project, clock: FixedClock
) -> None:
    mem = open_memory(agent_project.root, clock=clock, **IDLE)
    layer = SessionsLayer(mem)
    sweeper = layer.sweeper()
    sweeper.wake()  # not started: nothing will sweep, so nothing is awaited
    assert not sweeper.woken
    sweeper.start()
    _claude_appears(agent_project)
    sweeper.wake()
    wait_for(lambda: sweeper.cycles == 1 and not sweeper.woken, 30, "the woken sweep")
    assert layer.search("billing webhook retry", mode="lexical").hits
    sweeper.stop()
    assert not sweeper.woken and sweeper.cycles == 1  # an hour's interval: no other tick
