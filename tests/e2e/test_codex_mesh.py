"""One project memory shared by the real Codex CLI, Claude Code and pi (the mesh, issue 30).

All run headless in one project, with one ``HOME`` and one ``MEMLANE_HOME``:
Codex with ``memlane install codex`` against the fake Responses API, Claude
Code with memlane's plugin against the fake Messages API, pi with memlane's
pi package against the fake OpenAI-compatible model. A fact Codex's hooks
captured (anchored to Codex's rollout) is in Claude Code's and pi's next
snapshot and answers their ``memory_search``; ``memory_transcript`` in
Claude Code reads Codex's rollout (L3 across agents).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from claude_harness import ClaudeInstall, ClaudeWorld
from codex_harness import MEMLANE, CodexInstall, CodexWorld
from pi_harness import PiInstall, PiWorld

from fake_anthropic import FakeClaude, Request, Turn
from fake_llm import FakeModel, Reply
from fake_llm import Request as PiRequest
from fake_responses import FakeResponses
from helpers import wait_for

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__"
FACT_PROMPT = "Remember: the ledger service's on-call rotation hands over on Tuesdays at 09:00."
FACT_ANSWER = "Noted, the ledger on-call hands over every Tuesday at 09:00."
ANCHOR = re.compile(r"session:(\S+) turn:(\S+) transcript:(\S+?\.jsonl)")


Worlds = tuple[CodexWorld, ClaudeWorld, PiWorld, FakeResponses, FakeClaude]


@pytest.fixture(scope="module")
def worlds(
    codex_install: CodexInstall,
    claude_install: ClaudeInstall,
    pi_install: PiInstall,
    fake_model: FakeModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Worlds]:
    root = tmp_path_factory.mktemp("codex-mesh")
    shared = {"MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_LLM_PROVIDER": "none"}
    with FakeResponses() as codex_model, FakeClaude() as claude_model:
        codex = CodexWorld(codex_install, root, codex_model.base_url, env_extra=shared)
        claude = ClaudeWorld(claude_install, root, claude_model.base_url, env_extra=shared)
        # pi on the system clock too: each agent's snapshot holds today's notes by its own clock.
        pi_env = {**shared, "MEMLANE_HOME": str(codex.memlane_home), "MEMLANE_NOW": ""}
        pi = PiWorld(pi_install, root, fake_model.base_url, env_extra=pi_env)
        assert codex.project == claude.project == pi.project
        assert codex.memlane_home == claude.memlane_home
        codex.install()
        claude.install()
        pi.install_package(MEMLANE)
        yield codex, claude, pi, codex_model, claude_model
        codex.stop_engine()
        claude.stop_engine()


@pytest.fixture(scope="module")
def captured(worlds: Worlds) -> tuple[str, str]:
    """Codex's session: the fact captured; (its anchor's turn, its rollout)."""
    codex, _, _, codex_model, _ = worlds
    codex_model.agent(Reply.say(FACT_ANSWER))
    ran = codex.run(FACT_PROMPT)
    assert ran.returncode == 0, ran.stderr
    wait_for(lambda: "Tuesday at 09:00" in codex.memory_text(), 30, "the Codex capture")
    _, turn, transcript = next(
        a for a in ANCHOR.findall(codex.memory_text()) if a[0] == ran.session_id
    )
    assert transcript == str(codex.rollout(ran.session_id))
    return turn, transcript


def test_a_fact_captured_in_codex_is_recalled_in_claude_code(
    worlds: Worlds, captured: tuple[str, str]
) -> None:
    _, claude, _, _, claude_model = worlds
    turn, transcript = captured

    seen: dict[str, str] = {}

    def read(request: Request) -> Turn:
        seen["search"] = request.last_tool_result
        return Turn.call(f"{TOOL}memory_transcript", transcript_path=transcript, turn=turn)

    def answer(request: Request) -> Turn:
        seen["transcript"] = request.last_tool_result
        return Turn.say("Tuesdays at 09:00.")

    start = len(claude_model.requests)
    claude_model.agent(
        Turn.call(f"{TOOL}memory_search", query="ledger on-call handover"), read, answer
    )
    result = claude.run("When does the ledger on-call rotation hand over?")
    assert result.returncode == 0, result.stderr
    first = next(r for r in claude_model.requests[start:] if r.kind == "agent")
    assert "Tuesday at 09:00" in first.system  # Claude Code's snapshot holds Codex's capture
    assert "Tuesday at 09:00" in seen["search"], seen
    assert FACT_PROMPT in seen["transcript"], seen["transcript"]  # L3 read Codex's rollout


def test_a_fact_captured_in_codex_is_recalled_in_pi(
    worlds: Worlds, captured: tuple[str, str], fake_model: FakeModel
) -> None:
    pi = worlds[2]
    seen: dict[str, str] = {}

    def answer(request: PiRequest) -> Reply:
        seen["search"] = request.last_tool_result
        return Reply.say("Tuesdays.")

    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.call("memory_search", query="ledger on-call handover"), answer)
    result = pi.run("When does the ledger on-call hand over?")
    assert result.returncode == 0, result.stderr
    assert "Tuesday at 09:00" in fake_model.agent_requests[start].system  # pi's snapshot
    assert "Tuesday at 09:00" in seen["search"], seen
