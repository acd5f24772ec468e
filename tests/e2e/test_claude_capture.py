"""Capture in plugin mode with the real Claude Code, session after session (issue 26, item 5).

memlane is installed by ``memlane install claude-code`` (the default plugin
mode, user settings) and the engine distils with what a new user has: no
``[llm]`` settings, Claude Code's own ``claude`` on PATH, so memlane runs
``claude -p --model haiku`` (the real binary again, against the same fake
Messages API, which answers it as a side request).

1. Many ``claude -p`` sessions in a row: nothing of memlane is cancelled at
   exit (Claude Code gives a plugin's SessionEnd hooks 1.5 s; memlane installs
   none, docs/adr/0023), the engine ends each session once its Claude Code
   process is gone, and every session's exchange is written, distilled and
   anchored to that session.
2. ``memory_status`` (the model calls it through the plugin's MCP server) and
   ``memlane status`` name the LLM capture uses in Claude Code, the
   ``claude -p --model haiku`` command, not "none".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from claude_harness import MEMLANE, ClaudeInstall, ClaudeWorld, RunResult

from fake_anthropic import FakeClaude, Request, Turn
from helpers import wait_for

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__"
SESSIONS = 6
TOPIC = re.compile(r"topic-(\d+)-codename")


def distil(request: Request) -> str:
    """memlane's distillation (a side request): one bullet naming the exchange's topic."""
    found = TOPIC.search(request.everything)
    if found is None:
        return "- the user and the agent talked about the project"
    return f"- the team named topic {found.group(1)} with the codename distilled-{found.group(1)}"


@pytest.fixture(scope="module")
def model() -> Iterator[FakeClaude]:
    with FakeClaude(side=distil) as server:
        yield server


@pytest.fixture(scope="module")
def world(
    claude_install: ClaudeInstall, model: FakeClaude, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClaudeWorld]:
    bin_dir = str(claude_install.exe.parent)
    w = ClaudeWorld(
        claude_install,
        tmp_path_factory.mktemp("cc-capture"),
        model.base_url,
        env_extra={
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            # Claude Code's `claude` on PATH: capture distils with `claude -p --model haiku`.
            "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "/usr/bin:/bin")]),
        },
    )
    assert claude_install.exe.name == "claude"
    w.install()
    yield w
    w.stop_engine()


def ok(result: RunResult) -> RunResult:
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout[-2000:]}\n{result.stderr}"
    assert not result.result.get("is_error"), result.result
    return result


def wait_for_text(world: ClaudeWorld, needle: str, timeout_s: float = 90) -> str:
    deadline = time.monotonic() + timeout_s
    text = world.memory_text()
    while needle not in text and time.monotonic() < deadline:
        time.sleep(0.2)
        text = world.memory_text()
    return text


@pytest.fixture(scope="module")
def sessions(world: ClaudeWorld, model: FakeClaude) -> list[RunResult]:
    runs = []
    for n in range(SESSIONS):
        model.agent(Turn.say(f"Topic {n} is called topic-{n}-codename."))
        runs.append(ok(world.run(f"What do we call topic {n}?")))
    return runs


def test_1_claude_code_never_cancels_session_end_and_every_session_is_captured(
    world: ClaudeWorld, sessions: list[RunResult]
) -> None:
    for run in sessions:
        assert "Hook cancelled" not in run.stderr, run.stderr
        assert "SessionEnd hook" not in run.stderr, run.stderr
    ids = [run.session_id for run in sessions]
    assert len(set(ids)) == SESSIONS
    for n, session_id in enumerate(ids):
        bullet = f"- the team named topic {n} with the codename distilled-{n}"
        text = wait_for_text(world, bullet)
        assert bullet in text, f"{text[-3000:]}\n{world.engine_log()[-3000:]}"
        block = text[: text.index(bullet)].rsplit("###", 1)[1]
        assert f"session:{session_id} " in block, block
    # No SessionEnd hook (docs/adr/0023): the engine ends each session once its
    # Claude Code process is gone, as a SessionEnd did.
    for session_id in ids:
        ended = f"session {session_id[:8]}: its agent (pid "
        wait_for(lambda e=ended: e in world.engine_log(), 60, f"session {session_id[:8]} ended")
        assert "is gone: ending it" in world.engine_log().split(ended, 1)[1].split("\n", 1)[0]
    assert not world.hook_failures()


def test_2_memory_status_and_memlane_status_name_the_haiku_command(
    world: ClaudeWorld, model: FakeClaude, sessions: list[RunResult]
) -> None:
    command = f"command: {world.claude.exe} -p --model haiku"
    seen: list[Request] = []

    def report(request: Request) -> Turn:
        seen.append(request)
        return Turn.say("Memory is on.")

    model.agent(Turn.call(f"{TOOL}memory_status"), report)
    ok(world.run("Is memory on?", MCP_CONNECTION_NONBLOCKING="0"))
    assert seen, "the model never got memory_status's answer"
    (status,) = [r for r in seen[0].tool_results if r.name == f"{TOOL}memory_status"]
    assert not status.is_error, status.text
    details: dict[str, Any] = json.loads(status.text)
    llm = details["capture"]["llm"]
    assert command in llm and not llm.startswith("none"), llm

    out = subprocess.run(
        [MEMLANE, "status", "--json", "--no-probe"],
        cwd=world.project,
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    llm = json.loads(out.stdout)["capture"]["llm"]
    assert f"in Claude Code {command}" in llm, llm
