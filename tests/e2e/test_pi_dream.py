"""pi's ``/dream`` with the real pi binary and memlane's real dream.

The extension asks memlane's sidecar for the plan once (``dream.plan``), shows
it in a confirm dialog and, on yes, sends that very plan back
(``dream.apply``). pi's RPC mode turns ``ctx.ui.confirm`` into an
``extension_ui_request`` that the test answers with an
``extension_ui_response``, so both answers are driven here; print mode has no
UI to confirm with: it applies nothing and says how to apply the saved plan.
The dream's LLM is memlane's own (``MEMLANE_LLM_*``, a fake OpenAI server
scripted with the JSON plan) or, with ``llm.provider = auto``, pi's own
(fake) model through ``llm.complete``, which also serves ``memory_compact``
with capture off (``MEMLANE_CAPTURE=off``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import RUN_TIMEOUT_S, PiInstall, PiWorld, RpcPi, sidecar_pids

from fake_llm import DEFAULT_DISTILLATION, FakeModel, FakeOpenAI, Reply
from helpers import NOW

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")

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

PLAN: dict[str, Any] = {
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
def dream_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=json.dumps(PLAN), stream=False) as server:
        yield server


@pytest.fixture
def world(
    pi_install: PiInstall,
    fake_model: FakeModel,
    dream_llm: FakeOpenAI,
    tmp_path: Path,
    shared_cache: Path,
) -> Iterator[PiWorld]:
    temp = tmp_path / "tmp"  # pi's os.tmpdir(): where the plan file lives for a moment
    temp.mkdir()
    w = PiWorld(
        pi_install,
        tmp_path / "world",
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(tmp_path / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": dream_llm.base_url,
            "MEMLANE_LLM_MODEL": "fake-dreamer",
            "TMPDIR": str(temp),
        },
    )
    w.install_package(MEMLANE)
    store = w.project / ".memsearch" / "memory"
    (store / "topics").mkdir(parents=True)
    (store / "topics" / "debugging.md").write_text(DEBUGGING, encoding="utf-8")
    (store / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    yield w
    for pid in sidecar_pids(w.project):  # never leave one behind, even on failure
        os.kill(pid, signal.SIGKILL)


def _store(world: PiWorld) -> Path:
    return world.project / ".memsearch" / "memory"


def _files(world: PiWorld) -> dict[str, str]:
    store = _store(world)
    return {
        "topic": (store / "topics" / "debugging.md").read_text(encoding="utf-8"),
        "index": (store / "MEMORY.md").read_text(encoding="utf-8"),
    }


def _plan_files_left(world: PiWorld) -> list[Path]:
    return list(Path(world.env()["TMPDIR"]).glob("memlane-dream-*"))


def _start_dream(pi: RpcPi) -> str:
    """Send ``/dream`` without waiting: pi answers a command's prompt only
    after its handler returns, and this handler waits for the dialog."""
    rid = "dream"
    pi.send({"id": rid, "type": "prompt", "message": "/dream"})
    return rid


def _ui(pi: RpcPi, method: str, starts: str = "", timeout_s: float = 120) -> dict[str, Any]:
    """The UI request awaited; an error notification instead fails at once, saying why."""

    def wanted(r: dict[str, Any]) -> bool:
        return (r.get("method") == method and str(r.get("message", "")).startswith(starts)) or (
            method != "notify" and r.get("notifyType") == "error"
        )

    found = pi.wait_record(
        lambda r: r.get("type") == "extension_ui_request" and wanted(r), timeout_s
    )
    assert found.get("method") == method, found
    return found


def _handled(pi: RpcPi, rid: str) -> None:
    response = pi.wait_record(lambda r: r.get("type") == "response" and r.get("id") == rid, 120)
    assert response.get("success"), response  # errors are notifications, never thrown
    assert (response.get("data") or {}).get("disposition") == "handled"


def test_dream_confirmed_applies_the_plan_that_was_shown(
    world: PiWorld, dream_llm: FakeOpenAI
) -> None:
    with world.rpc() as pi:
        rid = _start_dream(pi)
        ask = _ui(pi, "confirm")
        assert ask["title"] == "Apply this dream plan?"
        shown = ask["message"]
        assert shown.startswith("Dream plan (openai/fake-dreamer): 2 file(s), 2 to update.")
        assert "- merged the two SSH gotcha entries of debugging" in shown
        assert "-## SSH gotcha" in shown and "+- [Debugging Tips](topics/debugging.md)" in shown
        assert _files(world) == {"topic": DEBUGGING, "index": INDEX}  # nothing before the yes
        planned = len(dream_llm.requests)
        assert "NEWER fact" in dream_llm.requests[-1].body["messages"][0]["content"]

        # Another answer now would be another plan: the saved one must be what applies.
        dream_llm.set(answer='{"topics": [], "delete": ["debugging"], "summary": []}')
        pi.send({"type": "extension_ui_response", "id": ask["id"], "confirmed": True})
        done = _ui(pi, "notify", "memlane dream applied")
        assert "2 file(s) changed" in done["message"]
        _handled(pi, rid)
        assert len(dream_llm.requests) == planned  # applying asked no LLM

    files = _files(world)
    assert "## SSH gotcha" not in files["topic"] and "## SSH Gotcha" in files["topic"]
    assert f"updated: {NOW.date().isoformat()}" in files["topic"]
    assert files["index"] == "- [Debugging Tips](topics/debugging.md) — SSH Gotcha\n"
    assert json.loads((_store(world) / ".dream-meta.json").read_text())["sessions_since"] == 0
    assert _plan_files_left(world) == []


def test_dream_declined_changes_nothing(world: PiWorld) -> None:
    with world.rpc() as pi:
        rid = _start_dream(pi)
        ask = _ui(pi, "confirm")
        assert "-## SSH gotcha" in ask["message"]
        pi.send({"type": "extension_ui_response", "id": ask["id"], "confirmed": False})
        _ui(pi, "notify", "memlane dream: declined, nothing was changed")
        _handled(pi, rid)
    assert _files(world) == {"topic": DEBUGGING, "index": INDEX}
    meta = json.loads((_store(world) / ".dream-meta.json").read_text())  # session start counts
    assert meta["last_dream_at"] is None  # no dream was recorded
    assert _plan_files_left(world) == []


def test_dream_in_print_mode_shows_the_plan_and_how_to_apply_it(
    world: PiWorld, dream_llm: FakeOpenAI
) -> None:
    out = subprocess.run(
        world.argv("-p", "/dream"),
        cwd=world.project,
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    # The plan is /dream's answer: on stdout, as /memory's answers are in `pi -p`.
    assert "Dream plan (openai/fake-dreamer)" in out.stdout
    assert "-## SSH gotcha" in out.stdout
    assert "cannot ask for confirmation in print mode: nothing was changed" in out.stdout
    assert _files(world) == {"topic": DEBUGGING, "index": INDEX}
    assert _plan_files_left(world) == []
    # The plan is kept in the store; the command it names applies exactly it, no LLM asked.
    saved = _store(world) / ".dream-plan.json"
    assert f"dream --apply-plan {json.dumps(str(saved))}" in out.stdout
    planned = len(dream_llm.requests)
    applied = subprocess.run(
        [MEMLANE, "-C", str(world.project), "dream", "--apply-plan", str(saved), "--yes"],
        env=world.env(MEMLANE_LLM_PROVIDER="none"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert applied.returncode == 0, applied.stderr
    assert "## SSH gotcha" not in _files(world)["topic"]
    assert len(dream_llm.requests) == planned


def test_dream_without_an_llm_is_a_notification(world: PiWorld, dream_llm: FakeOpenAI) -> None:
    with world.rpc(MEMLANE_LLM_PROVIDER="none") as pi:
        rid = _start_dream(pi)
        note = _ui(pi, "notify", "memlane dream failed")
        assert note["notifyType"] == "error"
        assert "needs an LLM" in note["message"] and "llm.provider" in note["message"]
        _handled(pi, rid)
        # pi is still usable after the failed command
        assert pi.command("get_state")
    assert not dream_llm.requests
    assert _files(world) == {"topic": DEBUGGING, "index": INDEX}
    assert _plan_files_left(world) == []


#: memlane with no [llm] of its own (the default): the host's model answers.
NO_LLM_OF_MEMLANES = {"MEMLANE_LLM_PROVIDER": "auto", "MEMLANE_LLM_MODEL": ""}


@pytest.fixture
def pi_model(fake_model: FakeModel) -> Iterator[FakeModel]:
    """pi's own model, answering memlane's llm.complete with the dream's plan."""
    fake_model.distill = json.dumps(PLAN)
    yield fake_model
    fake_model.distill = DEFAULT_DISTILLATION


def test_dream_without_an_llm_of_memlanes_uses_pis_model(
    world: PiWorld, dream_llm: FakeOpenAI, pi_model: FakeModel
) -> None:
    asked = len(pi_model.distill_requests)
    with world.rpc(**NO_LLM_OF_MEMLANES) as pi:
        rid = _start_dream(pi)
        ask = _ui(pi, "confirm")
        assert ask["message"].startswith("Dream plan (host/session model): 2 file(s), 2 to update.")
        assert "-## SSH gotcha" in ask["message"]
        dreams = pi_model.distill_requests[asked:]
        assert len(dreams) == 1 and "NEWER fact" in dreams[0].system
        # The session's own model, as pi-memory's dream falls back to the parent model
        # (distillation takes the provider's cheapest, fake-small).
        assert dreams[0].model == "fake-big"
        pi.send({"type": "extension_ui_response", "id": ask["id"], "confirmed": True})
        done = _ui(pi, "notify", "memlane dream applied")
        assert "2 file(s) changed" in done["message"]
        _handled(pi, rid)
    assert not dream_llm.requests  # memlane's own [llm] was never configured here
    files = _files(world)
    assert "## SSH gotcha" not in files["topic"] and "## SSH Gotcha" in files["topic"]
    assert files["index"] == "- [Debugging Tips](topics/debugging.md) — SSH Gotcha\n"


def test_memory_compact_with_capture_off_uses_pis_model(
    world: PiWorld, fake_model: FakeModel
) -> None:
    fake_model.distill = "- staging is reached over ssh on port 2222"
    fake_model.agent(Reply.call("memory_compact"), Reply.say("Compacted."))
    try:
        with world.rpc(**NO_LLM_OF_MEMLANES, MEMLANE_CAPTURE="off") as pi:
            pi.prompt("compact my memory")
            result = fake_model.agent_requests[-1].last_tool_result
    finally:
        fake_model.distill = DEFAULT_DISTILLATION
    assert "staging is reached over ssh on port 2222" in result, result
    assert "no LLM" not in result and "needs an LLM" not in result
    daily = (_store(world) / f"{NOW.date().isoformat()}.md").read_text(encoding="utf-8")
    assert "## Memory Compact" in daily
    assert "compact my memory" not in daily  # capture is off: the exchange itself is not kept
