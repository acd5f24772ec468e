"""No echo chamber (issue 13): what memlane handed the agent is not captured again.

Through the real path: memlane's tools called the way every host calls them
(``Tools(memory, session).call``), then ``Session.agent_settled`` with
memlane's OpenAI provider against the fake server, real files and index.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, start_session
from memlane.core.types import Exchange
from memlane.engine.journal.echo import (
    ALL_RESTATED,
    RECALL_PROMPT_PREFIX,
    Recalled,
    Verdict,
    is_memlane_tool,
    judge,
)
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.reports import render_status
from memlane.engine.tools.dispatch import Tools
from memlane.llm.base import LLM
from memlane.store.section import read_markdown

REPO = Path(__file__).resolve().parents[2]
DECISION = "production deploys need the release manager's approval since the March outage"
QUESTION = "who has to sign off before we ship to prod?"
RESTATED = (
    "According to memory, production deploys need the release manager's approval. "
    "That has been the rule since the March outage."
)
NEW_WORK = (
    "I added a required-reviewers rule to .github/CODEOWNERS so the release-managers "
    "team must review every change under deploy/."
)


def _session(mem: Memory, llm: LLM | None) -> Session:
    return start_session(mem, llm, auto_context_enabled=False)


def _entries(mem: Memory) -> list[str]:
    """The entries of today's daily file (heading and bullets), in order."""
    text = read_markdown(mem.scope.store / "2026-11-30.md")
    return re.split(r"\n(?=### )", text)[1:]


def _distils(server: FakeOpenAI) -> list[str]:
    return [r.prompt for r in server.requests if "Distil this exchange" in r.prompt]


@pytest.fixture
def recalled(memory: Memory) -> Memory:
    """A project whose memory holds the decision, indexed."""
    memory.write(f"- {DECISION}")
    memory.sync()
    return memory


def _search(tools: Tools) -> None:
    found = tools.call("memory_search", {"query": "release manager approval deploys"})
    assert "release manager" in found.text  # the recall this test is about happened


def test_an_answer_that_only_restates_a_search_is_not_captured(
    recalled: Memory, fake_openai: FakeOpenAI
) -> None:
    session = _session(recalled, fake_openai.llm())
    _search(Tools(recalled, session))
    queued = session.agent_settled(
        Exchange(user=QUESTION, assistant=RESTATED, entry_id="e2", tools=("memory_search",))
    )
    assert not queued.queued
    assert "only restated what memlane recalled" in (queued.reason or "")
    assert "memory_search" in (queued.reason or "")
    status = render_status(session.status())
    session.shutdown()
    assert len(_entries(recalled)) == 1  # the decision, not a second copy of it
    assert _distils(fake_openai) == []
    assert session.capture.skipped_recall_only == 1
    assert "1 only restated memory (not captured)" in status


def test_the_same_answer_without_a_memlane_tool_is_captured(
    recalled: Memory, fake_openai: FakeOpenAI
) -> None:
    # The words alone decide nothing: memlane must have handed them over.
    session = _session(recalled, fake_openai.llm())
    assert session.agent_settled(Exchange(user=QUESTION, assistant=RESTATED, entry_id="e2")).queued
    session.shutdown()
    assert len(_entries(recalled)) == 2
    assert session.capture.skipped_recall_only == 0


def test_the_recall_log_covers_one_exchange_only(recalled: Memory, fake_openai: FakeOpenAI) -> None:
    session = _session(recalled, fake_openai.llm())
    _search(Tools(recalled, session))
    session.agent_settled(Exchange(user="thanks", assistant="You're welcome.", entry_id="e2"))
    # The next exchange ran no memlane tool: it is captured whatever it says.
    assert session.agent_settled(Exchange(user=QUESTION, assistant=RESTATED, entry_id="e3")).queued
    session.shutdown()


@pytest.mark.parametrize("host_tools", [None, ("memory_search", "edit")])
def test_recall_and_new_work_is_captured_without_the_restated_sentences(
    recalled: Memory, fake_openai: FakeOpenAI, host_tools: tuple[str, ...] | None
) -> None:
    session = _session(recalled, fake_openai.llm())
    _search(Tools(recalled, session))
    queued = session.agent_settled(
        Exchange(
            user="make the repo enforce the deploy sign-off rule",
            assistant=f"{RESTATED}\n\n{NEW_WORK}",
            entry_id="e2",
            tools=host_tools,
        )
    )
    assert queued.queued
    session.shutdown()
    (prompt,) = _distils(fake_openai)
    assert "CODEOWNERS" in prompt and "make the repo enforce" in prompt
    assert "approval" not in prompt and "March outage" not in prompt
    assert session.capture.restated_dropped == 2
    assert len(_entries(recalled)) == 2


def test_restating_after_other_tools_ran_is_still_captured(
    recalled: Memory, fake_openai: FakeOpenAI
) -> None:
    # The host reports an edit: the exchange did work, whatever its answer says.
    session = _session(recalled, None)
    _search(Tools(recalled, session))
    queued = session.agent_settled(
        Exchange(
            user="apply the deploy rule",
            assistant=RESTATED,
            entry_id="e2",
            tools=("memory_search", "edit"),
        )
    )
    assert queued.queued
    session.shutdown()
    latest = _entries(recalled)[-1]
    assert "apply the deploy rule" in latest and ALL_RESTATED in latest
    assert "March outage" not in latest


def test_a_memory_write_is_not_captured_a_second_time(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    session = _session(memory, fake_openai.llm())
    fact = "the staging database is db-staging-2 on port 6432"
    Tools(memory, session).call("memory_write", {"text": fact})
    queued = session.agent_settled(
        Exchange(
            user=f"remember that {fact}",
            assistant=f"Saved: {fact}.",
            entry_id="e2",
            tools=("memory_write",),
        )
    )
    assert not queued.queued
    session.shutdown()
    assert len(_entries(memory)) == 1 and fact in _entries(memory)[0]


def test_a_forgotten_memory_is_not_written_back(memory: Memory, fake_openai: FakeOpenAI) -> None:
    secret_plan = "the payroll export runs from the bastion host every Friday night"
    memory.write(f"- {secret_plan}")
    memory.sync()
    (hit,) = memory.search("payroll export bastion", 1, sync=False).hits
    session = _session(memory, fake_openai.llm())
    Tools(memory, session).call("memory_forget", {"chunk_hash": hit.chunk_hash})
    queued = session.agent_settled(
        Exchange(
            user="forget the payroll note",
            assistant=f"Removed the entry: {secret_plan}.",
            entry_id="e2",
        )
    )
    assert not queued.queued
    session.shutdown()
    assert not any("payroll" in entry for entry in _entries(memory))


def test_a_recall_command_prompt_is_not_counted_as_news(
    recalled: Memory, fake_openai: FakeOpenAI
) -> None:
    # pi's /recall sends instructions along with the query: not the user's news.
    prompt = (
        f"{RECALL_PROMPT_PREFIX} deploy sign-off\n\nUse the recall skill: start with "
        "memory_search, go to memory_expand and then memory_transcript only if the "
        "shallower layer does not answer. Search this project's memory. Answer from what "
        "memory says and cite the chunk hashes you used."
    )
    session = _session(recalled, fake_openai.llm())
    _search(Tools(recalled, session))
    queued = session.agent_settled(Exchange(user=prompt, assistant=RESTATED, entry_id="e2"))
    assert not queued.queued
    session.shutdown()


def test_the_pi_recall_command_sends_the_prefix_memlane_recognises() -> None:
    shim = (REPO / "integrations" / "pi" / "extensions" / "memlane" / "commands.ts").read_text()
    (template,) = re.findall(r"const request = `([^`]*)`", shim)
    assert template.startswith(RECALL_PROMPT_PREFIX + " ${query}")


# -- the measure itself -------------------------------------------------------------------


def _judge(user: str, assistant: str, *texts: str) -> Verdict | None:
    return judge(user, assistant, Recalled(("memory_search",), texts))


def test_no_memlane_tool_no_verdict() -> None:
    assert judge(QUESTION, RESTATED, Recalled((), (DECISION,))) is None


def test_a_fact_the_user_states_is_news() -> None:
    verdict = _judge(
        "We deploy only on Fridays from now on, with a frozen main branch. " + QUESTION,
        "Production deploys need the release manager's approval.",
        DECISION,
    )
    assert verdict is not None and not verdict.recall_only


def test_the_users_questions_are_not_news() -> None:
    verdict = _judge("Which database migration broke staging last week?", RESTATED, DECISION)
    assert verdict is not None and verdict.recall_only


def test_a_sentence_that_only_shares_the_subject_is_kept() -> None:
    # New work on a recalled subject reuses its words; below the bar it stays.
    verdict = _judge(
        "enforce it",
        "I updated the deploy script to require the release manager's approval.",
        DECISION,
    )
    assert verdict is not None and verdict.restated == 0 and not verdict.recall_only


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        ("memory_search", True),
        ("memory_topic", True),
        ("mcp__memlane__memory_expand", True),
        ("mcp__plugin_memlane_memlane__memory_transcript", True),
        ("mcp__notes__memory_search", False),
        ("memlane_memory_search", True),  # OpenCode's <server>_<tool>
        ("notes_memory_search", False),
        ("memlane_read_file", False),
        ("mcp__memlane__read_file", False),
        ("bash", False),
        (None, False),
    ],
)
def test_which_tool_calls_are_memlanes(name: object, ours: bool) -> None:
    assert is_memlane_tool(name) is ours


def test_restating_the_question_adds_nothing() -> None:
    # "sign off", "ship" and "prod" come from the question, the rest from memory.
    verdict = _judge(
        QUESTION, "The release manager has to sign off before you ship to prod.", DECISION
    )
    assert verdict is not None and verdict.restated == 1 and verdict.recall_only


def test_auto_context_never_injects_what_this_session_captured(
    project: Path, clock: FixedClock
) -> None:
    """A repeated question's own captures match it best; they are in the
    model's context already, so auto-context injects the note that answers."""
    from datetime import datetime

    from helpers import open_memory, wait_for

    mem = open_memory(project, clock=clock, MEMLANE_AUTO_CONTEXT="on")
    answer = "the team pinned the Kafka client to 3.7 because 3.8 broke SASL authentication"
    mem.write(answer, now=datetime(2026, 11, 20, 9, 0))
    settings = replace(mem.config.session, auto_context_cap_ms=30_000, index_debounce_ms=10**9)
    session = Session.start(mem, host="test", session_id="s-now", llm=None, settings=settings)
    assert session.internals.indexer.settle(30) and session.internals.wait_auto_context_ready(60)
    question = "Why is the Kafka client pinned to 3.7, what broke with SASL authentication?"
    for n in range(4):  # the same question, captured each time (no LLM: a digest)
        queued = session.agent_settled(
            Exchange(user=question, assistant="Because 3.8 broke SASL.", entry_id=f"t{n}")
        )
        assert queued.queued
    wait_for(lambda: session.internals.pending_captures == 0, timeout=30, what="the captures")
    assert len(_entries(mem)) == 4  # today: the four captures of the question
    message = session.before_agent_start(question).message
    assert message is not None and answer in message
    assert "turn:t0" not in message and "session:s-now" not in message
    session.shutdown()
