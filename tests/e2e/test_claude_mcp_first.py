"""A fresh Claude Code session's first memlane call is answered (real ``claude -p``, plugin mode).

Claude Code starts MCP servers in the background and, headless, does not
wait for them by default: a tool whose server has not answered ``initialize``
and ``tools/list`` by the model's first request does not exist for that
session ("No such tool available"). ``memlane mcp`` answers both at once and
starts the warm engine behind it, so the model's very first call finds the
tool and its answer; nothing here sets ``MCP_CONNECTION_NONBLOCKING``.

Each run is a new ``claude -p`` (a new session, a new ``memlane mcp``); the
first with no engine running (the server starts it), the next with it warm.
``benchmarks/bench_claude_mcp.py`` runs the same sessions ten times each and
counts the answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import ClaudeInstall, ClaudeWorld, RunResult

from fake_anthropic import FakeClaude, Request, Turn

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__memory_search"
NOTE = "the release train leaves every Tuesday at noon from the staging branch"
QUESTION = "When does the release train leave?"


def seed(project: Path) -> None:
    """A note in the project's memory, as memlane writes it."""
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True, exist_ok=True)
    (store / "2026-11-20.md").write_text(
        "# 2026-11-20\n\n## Session 09:00\n### 09:00\n"
        "<!-- session:seed turn:0000000a transcript:/nonexistent/seed.jsonl -->\n"
        f"- {NOTE}\n"
    )


@pytest.fixture(scope="module")
def model() -> Iterator[FakeClaude]:
    with FakeClaude() as server:
        yield server


@pytest.fixture(scope="module")
def world(
    claude_install: ClaudeInstall, model: FakeClaude, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClaudeWorld]:
    w = ClaudeWorld(
        claude_install,
        tmp_path_factory.mktemp("cc-first"),
        model.base_url,
        env_extra={"MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_LLM_PROVIDER": "none"},
    )
    w.install()
    seed(w.project)
    yield w
    w.stop_engine()


def first_search(world: ClaudeWorld, model: FakeClaude, prompt: str) -> tuple[RunResult, str]:
    """One fresh session whose model calls memory_search first; its result's text."""
    seen: list[Request] = []

    def answer(request: Request) -> Turn:
        seen.append(request)
        return Turn.say("Tuesday at noon.")

    model.agent(Turn.call(TOOL, query="release train"), answer)
    result = world.run(prompt)
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout[-2000:]}\n{result.stderr}"
    assert seen, f"the session stopped before the tool's answer: {result.text}"
    (found,) = [r for r in seen[0].tool_results if r.name == TOOL]
    assert not found.is_error, found.text  # "No such tool available" is an error result
    return result, found.text


def test_the_first_call_of_a_fresh_session_with_no_engine_is_answered(
    world: ClaudeWorld, model: FakeClaude
) -> None:
    world.stop_engine()
    model.clear()
    result, text = first_search(world, model, QUESTION)
    assert NOTE in text, text
    # The tool was known in the model's very first request (Claude Code lists MCP
    # tools by name in a system message and loads their schemas on demand).
    assert TOOL in model.agent_requests[0].everything
    assert not [f for f in world.hook_failures() if f.get("client") == "mcp"]
    assert result.text == "Tuesday at noon."


def test_the_first_call_with_the_engine_warm_is_answered(
    world: ClaudeWorld, model: FakeClaude
) -> None:
    model.clear()
    _, text = first_search(world, model, QUESTION)
    assert NOTE in text, text
    assert TOOL in model.agent_requests[0].everything


def test_recall_in_a_fresh_session_is_answered(world: ClaudeWorld, model: FakeClaude) -> None:
    """``/memlane:recall`` runs in a forked subagent whose first act is memory_search."""
    model.clear()
    result, text = first_search(world, model, f"/memlane:recall {QUESTION}")
    assert NOTE in text, text
    forked = model.agent_requests[0]
    assert "You run in a forked context" in forked.prompt and QUESTION in forked.prompt
    assert result.returncode == 0
