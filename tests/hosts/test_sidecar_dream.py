"""pi's ``/dream`` and ``memory_compact`` on pi's model, through the sidecar protocol (issue 29).

memlane has no ``[llm]`` of its own here (``llm.provider`` is ``auto``): the
dream's plan and the compaction ask the host's model with ``llm.complete``.
The test is the host: it answers each ``llm.complete`` by asking a fake OpenAI
server on 127.0.0.1 through memlane's own OpenAI provider (real HTTP), as pi
answers with its model registry. The sidecar runs in this process
(test_sidecar.py's ``InProcess``), the dream is the engine's (plan, apply,
re-index).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_sidecar import InProcess

from fake_llm import FakeOpenAI
from helpers import FixedClock
from memlane.core.scope import resolve_scope
from memlane.core.settings import LlmSettings
from memlane.engine.sessions.registry import close_stores
from memlane.engine.topics import dream as D
from memlane.llm.factory import make_llm

DEBUGGING = """\
---
name: Debugging Tips
description: ssh on staging
type: feedback
updated: 2026-05-01
---

## SSH Gotcha
staging uses port 2222, key at ~/.ssh/staging

## SSH gotcha
Staging uses port 2222; key at ~/.ssh/staging.
"""
INDEX = "- [Debugging Tips](topics/debugging.md) — SSH Gotcha; SSH gotcha\n"
PLAN = {
    "topics": [
        {
            "slug": "debugging",
            "entries": [
                {
                    "title": "SSH Gotcha",
                    "content": "staging uses port 2222, key at ~/.ssh/staging",
                    "updated": "2026-05-01",
                }
            ],
        }
    ],
    "delete": [],
    "summary": ["merged the two SSH gotcha entries of debugging"],
}


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    """pi's model: what the host answers llm.complete with."""
    with FakeOpenAI(answer=json.dumps(PLAN), stream=False) as server:
        yield server


def host_answers_with(client: InProcess, model: FakeOpenAI) -> None:
    llm = make_llm(LlmSettings(provider="openai", base_url=model.base_url, model="pi-model"))
    assert llm is not None

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        text = llm.complete(params["system"], params["prompt"], max_tokens=params["max_tokens"])
        return {"text": text}

    client.answer_llm = answer


@pytest.fixture
def sidecar(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch, model: FakeOpenAI
) -> Iterator[InProcess]:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS", "50")
    monkeypatch.delenv("MEMLANE_LLM_PROVIDER", raising=False)  # auto: no model of memlane's
    store = resolve_scope(project).store
    (store / "topics").mkdir(parents=True)
    (store / "topics" / "debugging.md").write_text(DEBUGGING, encoding="utf-8")
    (store / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    client = InProcess(project, clock)
    host_answers_with(client, model)
    try:
        yield client
    finally:
        client.close()
        close_stores()


def _start(client: InProcess, project: Path) -> Any:
    return client.result(
        "session_start",
        {"cwd": str(project), "session_id": "s-1", "transcript_path": None, "host": "pi"},
    )


def _files(project: Path) -> tuple[str, str]:
    store = resolve_scope(project).store
    return (
        (store / "topics" / "debugging.md").read_text(encoding="utf-8"),
        (store / "MEMORY.md").read_text(encoding="utf-8"),
    )


def test_dream_plans_with_the_hosts_model_and_applies_the_plan_shown(
    sidecar: InProcess, project: Path, model: FakeOpenAI
) -> None:
    _start(sidecar, project)
    plan = sidecar.result("dream.plan", {})
    assert plan["rendered"].startswith("Dream plan (host/session model): 2 file(s), 2 to update.")
    assert "-## SSH gotcha" in plan["rendered"] and not plan["empty"]
    assert "saved_to" not in plan
    asked = sidecar.llm_requests[-1]
    assert "NEWER fact" in asked["system"] and asked["max_tokens"] == D.DREAM_MAX_TOKENS
    assert "model" not in asked and asked["model_role"] == "session"  # pi's session model
    assert [r.prompt for r in model.requests] == [asked["prompt"]]
    assert _files(project) == (DEBUGGING, INDEX)  # nothing before the yes

    # Another answer now would be another plan: the one shown is what applies.
    model.set(answer='{"topics": [], "delete": ["debugging"], "summary": []}')
    done = sidecar.result("dream.apply", {"plan": plan})
    assert done["applied"] is True and done["changes"] == 2
    assert len(model.requests) == 1  # applying asked no model
    topic, index = _files(project)
    assert "## SSH gotcha" not in topic and "## SSH Gotcha" in topic
    assert index == "- [Debugging Tips](topics/debugging.md) — SSH Gotcha\n"
    snapshot = sidecar.result("session_compact", {})["snapshot"]
    assert "SSH gotcha" not in snapshot  # the session shows the new MEMORY.md

    # The same plan again: the files moved on, so nothing is applied twice.
    again = sidecar.call("dream.apply", {"plan": plan})
    message = again["error"]["message"]
    assert "changed while the dream was planning" in message and "/dream" in message


def test_the_session_is_served_while_the_dream_waits_for_the_model(
    sidecar: InProcess, project: Path
) -> None:
    _start(sidecar, project)
    answer = sidecar.answer_llm
    sidecar.answer_llm = lambda params: None  # the model is thinking
    sidecar.send_line(json.dumps({"jsonrpc": "2.0", "id": "dream", "method": "dream.plan"}))
    # The plan waits for the model; the session's prompt does not wait for the plan.
    injection = sidecar.result("before_agent_start", {"prompt": "what port is staging ssh on?"})
    assert "memory_search" in injection["system_append"]
    status = sidecar.result("tool", {"name": "memory_status", "arguments": {}})
    assert status["details"]["session"]["session_id"] == "s-1"
    busy = sidecar.call("dream.plan", {})
    assert "already being planned" in busy["error"]["message"]
    while not sidecar.llm_requests:  # the dream's question may still be on its way
        message = sidecar.read()
        assert message.get("method") == "llm.complete", message
        sidecar.llm_requests.append(message["params"])
        sidecar.llm_ids.append(message["id"])
    assert len(sidecar.llm_requests) == 1
    params, request_id = sidecar.llm_requests[0], sidecar.llm_ids[0]
    reply = {"jsonrpc": "2.0", "id": request_id, "result": answer(params)}
    sidecar.send_line(json.dumps(reply))
    plan = sidecar.wait_for("dream")["result"]
    assert plan["rendered"].startswith("Dream plan (host/session model)")


def test_a_plan_nobody_can_confirm_is_saved_for_the_cli(sidecar: InProcess, project: Path) -> None:
    _start(sidecar, project)
    plan = sidecar.result("dream.plan", {"save": True})
    saved = Path(plan["saved_to"])
    store = resolve_scope(project).store
    assert saved == store / ".dream-plan.json" and saved.stat().st_mode & 0o777 == 0o600
    assert _files(project) == (DEBUGGING, INDEX)
    loaded = D.load_plan(saved, store)  # what `memlane dream --apply-plan` reads
    assert [c.relpath for c in loaded.changes] == [c["file"] for c in plan["changes"]]


def test_without_any_model_the_dream_says_what_to_configure(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_LLM_PROVIDER", "none")  # not even the host's
    client = InProcess(project, clock)
    try:
        before = client.call("dream.plan", {})
        assert "before session_start" in before["error"]["message"]
        _start(client, project)
        reply = client.call("dream.plan", {})
        assert "needs an LLM" in reply["error"]["message"]
        assert reply["error"]["data"]["hint"].startswith("set llm.provider")
        bad = client.call("dream.apply", {"plan": "yes"})
        assert bad["error"]["code"] == -32602
        assert not client.llm_requests
    finally:
        client.close()
        close_stores()


def test_capture_off_leaves_memory_compact_the_hosts_model(
    sidecar: InProcess, project: Path, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CAPTURE", "off")
    started = _start(sidecar, project)
    assert any("capture is off" in notice for notice in started["notices"])
    settled = sidecar.result(
        "agent_settled", {"exchange": {"user": "remember port 2222", "assistant": "Noted."}}
    )
    assert settled == {"queued": False, "reason": "capture is off"}
    sidecar.result(
        "tool", {"name": "memory_write", "arguments": {"text": "staging ssh is on port 2222"}}
    )
    model.set(answer="- staging ssh listens on port 2222")
    compacted = sidecar.result("tool", {"name": "memory_compact", "arguments": {}})
    assert "port 2222" in compacted["text"]
    assert sidecar.llm_requests, "memory_compact asked the host's model"
    status = sidecar.result("tool", {"name": "memory_status", "arguments": {}})
    capture = status["details"]["session"]["capture"]
    assert capture["enabled"] is False
    assert status["details"]["session"]["extraction"]["enabled"] is False
