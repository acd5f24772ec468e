"""``memlane status`` shows today's LLM calls and tokens against the daily budget
(llm/budget.py), in its text and its ``--json``, and says when it is spent."""

from __future__ import annotations

import json

from fake_llm import FakeOpenAI
from helpers import Cli
from memlane.core.settings import LlmSettings
from memlane.llm.factory import make_llm

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


def test_status_shows_todays_counters_against_the_budget(cli: Cli, fake_openai: FakeOpenAI) -> None:
    assert cli.clock is not None
    llm = make_llm(
        LlmSettings(provider="openai", base_url=fake_openai.base_url, model="m", daily_calls=2),
        clock=cli.clock,
    )
    assert llm is not None
    llm.complete("sys", "one")
    out = cli("status", "--no-probe", env={**LEXICAL, "MEMLANE_LLM_DAILY_CALLS": "2"})
    assert out.returncode == 0, out.stderr
    assert (
        "llm budget       today 1 of 2 calls, 15 of 2000000 tokens "
        "(15 reported by the provider, 0 estimated)"
    ) in out.stdout
    assert "daily LLM budget reached" not in out.stdout

    llm.complete("sys", "two")
    out = cli("status", "--json", "--no-probe", env={**LEXICAL, "MEMLANE_LLM_DAILY_CALLS": "2"})
    data = json.loads(out.stdout)
    budget = data["llm_budget"]
    assert (budget["day"], budget["calls"], budget["daily_calls"]) == ("2026-11-30", 2, 2)
    assert budget["reached"] == "daily LLM budget reached: 2 of 2 calls today"
    assert any(note.startswith("llm: daily LLM budget reached") for note in data["notices"])


def test_a_negative_budget_is_reported_not_a_failure(cli: Cli) -> None:
    """The setting is checked where it is loaded: not used, and named under missing."""
    env = {**LEXICAL, "MEMLANE_LLM_PROVIDER": "anthropic", "MEMLANE_LLM_DAILY_TOKENS": "-5"}
    out = cli("status", "--no-probe", env=env)
    assert out.returncode == 0, out.stderr
    assert (
        "missing: config: $MEMLANE_LLM_DAILY_TOKENS: llm.daily_tokens = '-5' is not allowed: "
        "it must be a whole number of at least 0; llm.daily_tokens stays 2000000 (default)"
    ) in out.stdout
