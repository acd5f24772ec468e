"""The pi extension's JSON-RPC client against a misbehaving sidecar (scripted_sidecar.py).

The real pi runs the extension; ``MEMLANE_COMMAND`` points it at the scripted
sidecar, which ignores EOF, answers with errors, interleaves its own
``llm.complete`` request with garbage, or never answers.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall, PiWorld

from fake_llm import FakeModel, Reply, Request

pytestmark = pytest.mark.e2e

SCRIPTED = Path(__file__).with_name("scripted_sidecar.py")


@dataclass
class ScriptedWorld(PiWorld):
    """A pi world whose "memlane" is the scripted sidecar, logging to ``log``."""

    log: Path = Path(os.devnull)


@pytest.fixture
def world(pi_install: PiInstall, fake_model: FakeModel, tmp_path: Path) -> Iterator[ScriptedWorld]:
    wrapper = tmp_path / "bin" / "memlane"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SCRIPTED}" "$@"\n')
    wrapper.chmod(0o755)
    w = ScriptedWorld(
        pi_install, tmp_path / "world", fake_model.base_url, log=tmp_path / "sidecar.jsonl"
    )
    w.install_package(str(wrapper))
    yield w
    for pid in _pids(w):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _records(world: ScriptedWorld) -> list[dict[str, Any]]:
    log = world.log
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _pids(world: ScriptedWorld) -> list[int]:
    return sorted({r["pid"] for r in _records(world)})


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _env(world: ScriptedWorld, mode: str) -> dict[str, str]:
    return {"SCRIPTED_SIDECAR_MODE": mode, "SCRIPTED_SIDECAR_LOG": str(world.log)}


def test_a_sidecar_that_ignores_eof_is_killed_after_the_grace(
    world: ScriptedWorld, fake_model: FakeModel
) -> None:
    fake_model.agent(Reply.say("hi"))
    result = world.run("hello", **_env(world, "hang_on_eof"))
    assert result.returncode == 0, result.stderr
    records = _records(world)
    assert [r.get("method") for r in records if "method" in r][-1] == "session_shutdown"
    assert any(r.get("eof") for r in records), "the sidecar never saw stdin close"
    (pid,) = _pids(world)
    assert not _alive(pid), "the sidecar outlived pi"
    # pi's own word that it stopped waiting after the grace and killed the child
    assert "killing it" in result.stderr


def test_a_tool_error_reaches_the_model_as_an_error_result(
    world: ScriptedWorld, fake_model: FakeModel
) -> None:
    seen: list[str] = []

    def record(request: Request) -> Reply:
        seen.append(request.last_tool_result)
        return Reply.say("sorry")

    fake_model.agent(Reply.call("memory_expand", chunk_hash="deadbeefdeadbeef"), record)
    result = world.run("expand it", **_env(world, "tool_error"))
    assert result.returncode == 0, result.stderr
    assert seen, "the model never got the tool result back"
    assert "no chunk with hash deadbeefdeadbeef" in seen[0]
    ends = [e for e in result.events if e.get("type") == "tool_execution_end"]
    assert ends and ends[0]["isError"] is True


def test_host_requests_interleave_with_a_pending_event_and_garbage_is_skipped(
    world: ScriptedWorld, fake_model: FakeModel
) -> None:
    fake_model.distill = "HELLO-FROM-PI-MODEL"
    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("ok"))
    result = world.run("hello", **_env(world, "chatty"))
    assert result.returncode == 0, result.stderr
    system = fake_model.agent_requests[start].system
    assert "SCRIPTED-SNAPSHOT HELLO-FROM-PI-MODEL" in system
    assert "ignoring a non-JSON line" in result.stderr


def test_unanswered_events_are_skipped_then_the_sidecar_is_restarted(
    world: ScriptedWorld, fake_model: FakeModel
) -> None:
    with world.rpc(**_env(world, "mute")) as pi:
        for n in range(3):
            fake_model.agent(Reply.say(f"answer {n}"))
            settled = pi.prompt(f"prompt {n}", timeout_s=60)
            assert settled.get("aborted") is False
        # three unanswered before_agent_start in a row: the child is killed and respawned lazily
        fake_model.agent(Reply.call("memory_status"), Reply.say("done"))
        pi.prompt("status", timeout_s=60)
    pids = _pids(world)
    assert len(pids) == 2, pids
    starts = [r for r in _records(world) if r.get("method") == "session_start"]
    assert [r["pid"] for r in starts] == pids
