"""One project memory shared by the real Codex CLI and the real Claude Code (the mesh, issue 30).

Both run headless in one project, with one ``HOME`` and one ``MEMLANE_HOME``:
Codex with ``memlane install codex`` against the fake Responses API, Claude
Code with memlane's plugin against the fake Messages API. A fact Codex's
hooks captured (anchored to Codex's rollout) is in Claude Code's next
snapshot and answers its ``memory_search``; ``memory_transcript`` in Claude
Code reads Codex's rollout (L3 across agents).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from claude_harness import ClaudeInstall, ClaudeWorld
from codex_harness import CodexInstall, CodexWorld

from fake_anthropic import FakeClaude, Request, Turn
from fake_llm import Reply
from fake_responses import FakeResponses
from helpers import wait_for

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__"
FACT_PROMPT = "Remember: the ledger service's on-call rotation hands over on Tuesdays at 09:00."
FACT_ANSWER = "Noted, the ledger on-call hands over every Tuesday at 09:00."
ANCHOR = re.compile(r"session:(\S+) turn:(\S+) transcript:(\S+?\.jsonl)")


@pytest.fixture(scope="module")
def worlds(
    codex_install: CodexInstall,
    claude_install: ClaudeInstall,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[CodexWorld, ClaudeWorld, FakeResponses, FakeClaude]]:
    root = tmp_path_factory.mktemp("codex-mesh")
    shared = {"MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_LLM_PROVIDER": "none"}
    with FakeResponses() as codex_model, FakeClaude() as claude_model:
        codex = CodexWorld(codex_install, root, codex_model.base_url, env_extra=shared)
        claude = ClaudeWorld(claude_install, root, claude_model.base_url, env_extra=shared)
        assert codex.project == claude.project and codex.memlane_home == claude.memlane_home
        codex.install()
        claude.install()
        yield codex, claude, codex_model, claude_model
        codex.stop_engine()
        claude.stop_engine()


def test_a_fact_captured_in_codex_is_recalled_in_claude_code(
    worlds: tuple[CodexWorld, ClaudeWorld, FakeResponses, FakeClaude],
) -> None:
    codex, claude, codex_model, claude_model = worlds
    codex_model.agent(Reply.say(FACT_ANSWER))
    ran = codex.run(FACT_PROMPT)
    assert ran.returncode == 0, ran.stderr
    wait_for(lambda: "Tuesday at 09:00" in codex.memory_text(), 30, "the Codex capture")
    _, turn, transcript = next(
        a for a in ANCHOR.findall(codex.memory_text()) if a[0] == ran.session_id
    )
    assert transcript == str(codex.rollout(ran.session_id))

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
    assert "Tuesday at 09:00" in seen["search"] and transcript in seen["search"], seen
    assert FACT_PROMPT in seen["transcript"], seen["transcript"]  # L3 read Codex's rollout
