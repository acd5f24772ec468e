"""The daily LLM budget (llm/budget.py): counted per user and local day in one
file every memlane process shares, tokens as the provider reports them or
estimated, and refused past the limits without reaching the provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeAnthropic, FakeOpenAI
from helpers import NOW, FixedClock
from memlane.core.paths import memlane_home
from memlane.core.settings import LLM_DAILY_CALLS, LLM_DAILY_TOKENS, LlmSettings
from memlane.llm.budget import (
    USAGE_FILE,
    BudgetedLLM,
    Ledger,
    Limits,
    LlmBudgetExhausted,
    budget_line,
    budget_report,
    estimate_tokens,
)
from memlane.llm.factory import make_llm

SRC = Path(__file__).resolve().parents[2] / "src"


def _openai(server: FakeOpenAI, clock: FixedClock, **budget: int) -> Any:
    chosen = LlmSettings(provider="openai", base_url=server.base_url, model="fake-model", **budget)
    return make_llm(chosen, clock=clock)


def _usage() -> dict[str, Any]:
    return dict(json.loads((memlane_home() / USAGE_FILE).read_text()))


def test_the_defaults_are_a_budget_not_unlimited() -> None:
    assert LlmSettings().daily_calls == LLM_DAILY_CALLS > 0
    assert LlmSettings().daily_tokens == LLM_DAILY_TOKENS > 0


def test_tokens_the_provider_reports_are_counted_as_reported(fake_openai: FakeOpenAI) -> None:
    llm = _openai(fake_openai, FixedClock(NOW))
    assert isinstance(llm, BudgetedLLM)
    llm.complete("sys", "hello")
    llm.complete("sys", "again")
    usage = _usage()
    # FakeOpenAI reports 10 prompt + 5 completion tokens for every answer.
    assert usage["day"] == "2026-11-30"
    assert (usage["calls"], usage["tokens_reported"], usage["tokens_estimated"]) == (2, 30, 0)


def test_tokens_of_a_provider_that_reports_none_are_estimated(
    fake_anthropic: FakeAnthropic,
) -> None:
    # FakeAnthropic's messages carry no usage at all.
    fake_anthropic.set(answer="- twelve chars")
    chosen = LlmSettings(provider="anthropic", base_url=fake_anthropic.base_url, api_key="k")
    llm = make_llm(chosen, clock=FixedClock(NOW))
    assert llm is not None
    llm.complete("s" * 40, "p" * 60)
    usage = _usage()
    assert usage["tokens_reported"] == 0
    assert usage["tokens_estimated"] == estimate_tokens("s" * 40, "p" * 60, "- twelve chars") == 29


def test_past_the_call_limit_nothing_reaches_the_provider(fake_openai: FakeOpenAI) -> None:
    llm = _openai(fake_openai, FixedClock(NOW), daily_calls=2)
    llm.complete("sys", "one")
    llm.complete("sys", "two")
    with pytest.raises(LlmBudgetExhausted) as refused:
        llm.complete("sys", "three")
    assert "2 of 2 calls today" in refused.value.message
    assert "llm.daily_calls" in (refused.value.hint or "")
    assert len(fake_openai.requests) == 2
    assert _usage()["refused"] == 1


def test_past_the_token_limit_the_next_call_is_refused(fake_openai: FakeOpenAI) -> None:
    llm = _openai(fake_openai, FixedClock(NOW), daily_calls=0, daily_tokens=20)
    llm.complete("sys", "one")  # 15 tokens: under 20, so one more call may start
    llm.complete("sys", "two")  # 30 tokens now
    with pytest.raises(LlmBudgetExhausted, match="30 of 20 tokens"):
        llm.complete("sys", "three")
    assert len(fake_openai.requests) == 2


def test_zero_is_unlimited(fake_openai: FakeOpenAI) -> None:
    clock = FixedClock(NOW)
    llm = _openai(fake_openai, clock, daily_calls=0, daily_tokens=0)
    for number in range(5):
        llm.complete("sys", f"call {number}")
    assert _usage()["calls"] == 5
    line = budget_line(budget_report(Limits(0, 0), Ledger(clock=clock)))
    assert line.startswith("today 5 (unlimited) calls, 75 (unlimited) tokens")


def test_a_new_local_day_starts_from_zero(fake_openai: FakeOpenAI) -> None:
    clock = FixedClock(NOW)
    llm = _openai(fake_openai, clock, daily_calls=1)
    llm.complete("sys", "monday")
    with pytest.raises(LlmBudgetExhausted):
        llm.complete("sys", "monday again")
    clock.advance(timedelta(hours=14))  # 00:00 UTC on Tuesday
    llm.complete("sys", "tuesday")
    usage = _usage()
    assert (usage["day"], usage["calls"], usage["refused"]) == ("2026-12-01", 1, 0)
    assert len(fake_openai.requests) == 2


def test_a_failed_call_counts_as_a_call_without_tokens(fake_openai: FakeOpenAI) -> None:
    fake_openai.set(status=500)
    llm = _openai(fake_openai, FixedClock(NOW))
    with pytest.raises(Exception, match="HTTP 500"):
        llm.complete("sys", "hello")
    usage = _usage()
    assert (usage["calls"], usage["tokens"]) == (1, 0)


def test_status_report_says_which_tokens_are_estimated(fake_openai: FakeOpenAI) -> None:
    clock = FixedClock(NOW)
    _openai(fake_openai, clock).complete("sys", "hello")
    report = budget_report(Limits(1000, 2_000_000), Ledger(clock=clock))
    assert report["reached"] is None
    assert budget_line(report) == (
        "today 1 of 1000 calls, 15 of 2000000 tokens (15 reported by the provider, 0 estimated)"
    )


def test_a_damaged_counters_file_starts_the_day_again(fake_openai: FakeOpenAI) -> None:
    home = memlane_home()
    home.mkdir(parents=True, exist_ok=True)
    (home / USAGE_FILE).write_text("{not json")
    _openai(fake_openai, FixedClock(NOW)).complete("sys", "hello")
    assert _usage()["calls"] == 1


# A memlane process making LLM calls: pi's sidecar, the Claude Code engine
# and the CLI each have their own BudgetedLLM over the one counters file.
_WORKER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, UTC
    from memlane.core.clock import FixedClock
    from memlane.llm.budget import BudgetedLLM, Ledger, Limits, LlmBudgetExhausted

    class Echo:
        name = "echo/test"
        def complete(self, system, prompt, *, max_tokens=800, timeout_s=None):
            return "- " + prompt

    clock = FixedClock(datetime(2026, 11, 30, 10, 0, tzinfo=UTC))
    llm = BudgetedLLM(Echo(), Limits(calls=int(sys.argv[1]), tokens=0), Ledger(clock=clock))
    answered = 0
    for number in range(int(sys.argv[2])):
        try:
            llm.complete("", f"call {number:02d}")  # 16 characters with the answer: 4 tokens
            answered += 1
        except LlmBudgetExhausted:
            pass
    print(answered)
    """
)


@pytest.mark.subprocess
def test_processes_share_one_budget(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, "25", "10"], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    answered = [int(worker.communicate(timeout=120)[0]) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers)
    assert sum(answered) == 25  # 40 calls tried, exactly the budget answered
    usage = _usage()
    assert (usage["calls"], usage["refused"], usage["tokens_estimated"]) == (25, 15, 25 * 4)
