"""A session's LLM from the configuration, whatever the host: inside Claude Code
``auto`` distils with the user's ``claude -p`` (or says how to configure one),
and past the daily LLM budget capture writes verbatim digests and says so
once (a session notice, and the status)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, open_memory, wait_for
from memlane.core.types import Exchange
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.reports import render_status
from memlane.llm.defaults import CLAUDE_NOT_FOUND_HINT as NOT_FOUND_HINT
from memlane.store.section import read_markdown

BUDGET_MARKER = "- [distillation failed: daily LLM budget reached: 2 of 2 calls today]"


def _exchange(number: int) -> Exchange:
    return Exchange(
        user=f"question {number} about the deploy",
        assistant=f"answer {number}: staging is green",
        entry_id=f"e{number}",
    )


def _daily(mem: Memory) -> str:
    return read_markdown(mem.scope.store / "2026-11-30.md")


def test_past_the_budget_capture_writes_digests_and_says_so_once(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- the deploy to staging went through")
    mem = open_memory(
        project,
        clock=clock,
        MEMLANE_LLM_PROVIDER="openai",
        MEMLANE_LLM_BASE_URL=fake_openai.base_url,
        MEMLANE_LLM_MODEL="tiny-local",
        MEMLANE_LLM_DAILY_CALLS="2",
        MEMLANE_TOPICS_ENABLED="off",  # one LLM call per exchange: the distillation
    )
    session = Session.open(mem, host="test", session_id="s-budget")
    for number in range(4):
        session.agent_settled(_exchange(number))
        wait_for(lambda n=number: session.capture.written == n + 1, what=f"entry {number}")
    assert session.shutdown().flushed

    assert len(fake_openai.requests) == 2  # the refused calls never left the process
    text = _daily(mem)
    assert text.count("- the deploy to staging went through") == 2
    assert text.count(BUDGET_MARKER) == 2
    assert "answer 3: staging is green" in text  # the digest keeps the exchange
    said = [notice for notice in session.notices if "daily LLM budget reached" in notice]
    assert len(said) == 1
    assert "llm.daily_calls" in said[0] and "verbatim digests" in said[0]

    status = session.status()
    assert status.llm_budget is not None
    assert (status.llm_budget["calls"], status.llm_budget["refused"]) == (2, 2)
    assert status.to_json()["llm_budget"]["reached"].startswith("daily LLM budget reached")
    report = render_status(status)
    assert "llm budget" in report and "today 2 of 2 calls" in report
    assert "note: llm: daily LLM budget reached: 2 of 2 calls today" in report
    assert report.count("daily LLM budget reached") == 1  # said once, not per source
    assert sum("daily LLM budget reached" in n for n in status.notices) == 1  # said once


FAKE_CLAUDE = """#!/bin/sh
cat > /dev/null
echo '{"type": "result", "is_error": false, "result": "- distilled by claude haiku", \
"usage": {"input_tokens": 50, "output_tokens": 8}}'
"""


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """FAKE_CLAUDE as the only `claude` on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(FAKE_CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir / "claude"


@pytest.mark.usefixtures("fake_claude")
def test_inside_claude_code_auto_distils_with_claude(project: Path, clock: FixedClock) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_TOPICS_ENABLED="off")
    session = Session.open(mem, host="claude-code", session_id="s-cc")
    assert session.llm is not None and session.llm.name == "claude-code/haiku"
    session.agent_settled(_exchange(1))
    assert session.shutdown().flushed
    assert "- distilled by claude haiku" in _daily(mem)
    capture_llm = session.status().capture["llm"]
    assert capture_llm == "claude-code/haiku"


@pytest.mark.usefixtures("fake_claude")
def test_inside_claude_code_a_surfacing_model_never_starts_claude_per_prompt(
    project: Path, clock: FixedClock
) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_AUTO_SURFACING_MODEL="claude-haiku-4-5")
    session = Session.open(mem, host="claude-code", session_id="s-cc")
    try:
        assert session.internals.surfacer is not None and session.internals.surfacer.llm is None
        assert any("would start a claude -p on every prompt" in n for n in session.notices)
    finally:
        session.shutdown()


def test_inside_claude_code_without_claude_a_notice_says_how_to_configure(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    mem = open_memory(project, clock=clock)
    session = Session.open(mem, host="claude-code", session_id="s-cc")
    assert session.llm is None
    assert f"no LLM for distillation: {NOT_FOUND_HINT}" in session.notices
    session.agent_settled(_exchange(1))
    assert session.shutdown().flushed
    assert "[no distillation: no LLM configured]" in _daily(mem)


def test_the_budget_notice_comes_again_on_a_new_day_only(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    mem = open_memory(
        project,
        clock=clock,
        MEMLANE_LLM_PROVIDER="openai",
        MEMLANE_LLM_BASE_URL=fake_openai.base_url,
        MEMLANE_LLM_MODEL="tiny-local",
        MEMLANE_LLM_DAILY_CALLS="1",
        MEMLANE_TOPICS_ENABLED="off",
    )
    session = Session.open(mem, host="test", session_id="s-days")

    def settle(number: int) -> None:
        session.agent_settled(_exchange(number))
        wait_for(lambda: session.capture.written == number + 1, what=f"entry {number}")

    def said() -> int:
        return sum("daily LLM budget reached" in notice for notice in session.notices)

    for number in range(3):  # one distilled, two refused: said once
        settle(number)
    assert said() == 1
    clock.advance(days=1)
    settle(3)  # a new day, a new budget: distilled
    assert said() == 1
    settle(4)  # refused again: said again, once for this day
    settle(5)
    assert said() == 2
    assert session.shutdown().flushed
    assert len(fake_openai.requests) == 2
