"""One project memory shared by the real pi and the real Claude Code (the mesh).

Both agents run headless in one project, with one ``HOME`` and one
``MEMLANE_HOME``: pi with memlane's pi package (``memlane install pi``) against
the fake OpenAI-compatible model, Claude Code with memlane's plugin
(``memlane install claude-code``) against the fake Messages API.

1. pi writes a note (``memory_write``); Claude Code's next session has it in
   its snapshot and finds it with ``memory_search``.
2. Claude Code's exchange is captured by its hooks; pi's next session has it in
   its snapshot and finds it with ``memory_search``, anchored to Claude Code's
   transcript.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from claude_harness import MEMLANE, ClaudeInstall, ClaudeWorld
from pi_harness import PiInstall, PiWorld

from fake_anthropic import FakeClaude, Request, Turn
from fake_llm import FakeModel, Reply
from fake_llm import Request as PiRequest

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__"
PI_NOTE = "The billing service retries webhooks three times with exponential backoff."
CC_PROMPT = "Which queue should the billing service publish invoices to?"
CC_ANSWER = "Publish invoices to RabbitMQ, on the billing.invoices exchange."
CC_BULLET = "the user and the agent chose RabbitMQ for billing invoices on billing.invoices"
ANCHOR = re.compile(r"session:(\S+) turn:(\S+) transcript:(\S+?\.jsonl)")


def distil_cc(request: Request) -> str:
    if "billing service publish" in request.everything:
        return f"- {CC_BULLET}"
    return "- the user and the agent talked about billing"


def distil_pi(request: PiRequest) -> str:
    return "- the user asked pi to note the webhook retry rule"


@pytest.fixture(scope="module")
def claude_model() -> Iterator[FakeClaude]:
    with FakeClaude(side=distil_cc) as server:
        yield server


@pytest.fixture(scope="module")
def worlds(
    claude_install: ClaudeInstall,
    pi_install: PiInstall,
    claude_model: FakeClaude,
    fake_model: FakeModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ClaudeWorld, PiWorld]]:
    root = tmp_path_factory.mktemp("mesh")
    shared = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    claude = ClaudeWorld(
        claude_install,
        root,
        claude_model.base_url,
        env_extra={
            **shared,
            "MEMLANE_LLM_PROVIDER": "anthropic",
            "MEMLANE_LLM_BASE_URL": claude_model.base_url,
            "MEMLANE_LLM_API_KEY": "env:ANTHROPIC_API_KEY",
        },
    )
    pi = PiWorld(
        pi_install,
        root,
        fake_model.base_url,
        # Both agents on the system clock: Claude Code's engine keeps the real time, and
        # each agent's snapshot holds today's and yesterday's notes by its own clock.
        env_extra={**shared, "MEMLANE_HOME": str(claude.memlane_home), "MEMLANE_NOW": ""},
    )
    assert pi.project == claude.project and pi.home == claude.home
    fake_model.distill = distil_pi
    claude.install()
    pi.install_package(MEMLANE)
    yield claude, pi
    claude.stop_engine()


def wait_for_text(world: ClaudeWorld, needle: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    text = world.memory_text()
    while needle not in text and time.monotonic() < deadline:
        time.sleep(0.1)
        text = world.memory_text()
    return text


def test_pi_writes_and_claude_code_recalls(
    worlds: tuple[ClaudeWorld, PiWorld], claude_model: FakeClaude, fake_model: FakeModel
) -> None:
    claude, pi = worlds
    fake_model.agent(Reply.call("memory_write", text=PI_NOTE), Reply.say("Noted."))
    result = pi.run("Note how billing retries webhooks.")
    assert result.returncode == 0, result.stderr
    assert PI_NOTE in wait_for_text(claude, PI_NOTE)

    seen: dict[str, str] = {}

    def answer(request: Request) -> Turn:
        seen["search"] = request.last_tool_result
        return Turn.say(CC_ANSWER)

    start = len(claude_model.requests)
    claude_model.agent(Turn.call(f"{TOOL}memory_search", query="billing webhooks retry"), answer)
    ran = claude.run(CC_PROMPT)
    assert ran.returncode == 0, ran.stderr
    first = next(r for r in claude_model.requests[start:] if r.kind == "agent")
    assert PI_NOTE in first.system  # Claude Code's snapshot has pi's note
    assert PI_NOTE in seen["search"], seen["search"]


def test_claude_code_captures_and_pi_recalls(
    worlds: tuple[ClaudeWorld, PiWorld], fake_model: FakeModel
) -> None:
    claude, pi = worlds
    text = wait_for_text(claude, CC_BULLET)
    assert CC_BULLET in text, claude.engine_log()[-3000:]
    seen: dict[str, str] = {}

    def answer(request: PiRequest) -> Reply:
        seen["search"] = request.last_tool_result
        return Reply.say("RabbitMQ.")

    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.call("memory_search", query="billing invoices queue RabbitMQ"), answer)
    result = pi.run("Where do billing invoices go?")
    assert result.returncode == 0, result.stderr
    assert CC_BULLET in fake_model.agent_requests[start].system  # pi's snapshot
    assert CC_BULLET in seen["search"], seen["search"]

    # the entry Claude Code's hooks wrote is anchored to Claude Code's transcript
    block = text[: text.index(CC_BULLET)].rsplit("###", 1)[1]
    session_id, _, transcript = ANCHOR.findall(block)[0]
    assert transcript == str(claude.transcript(session_id))
