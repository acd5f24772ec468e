"""pi's ``/dream`` with the real pi binary and the real ``memlane dream``.

The extension plans once (``memlane dream --dry-run --save-plan``), shows the
plan in a confirm dialog and, on yes, applies that saved plan
(``--apply-plan``). pi's RPC mode turns ``ctx.ui.confirm`` into an
``extension_ui_request`` that the test answers with an
``extension_ui_response``, so both answers are driven here; print mode has no
UI to confirm with and must apply nothing. The dream's LLM is memlane's own
(``MEMLANE_LLM_*``), a fake OpenAI server scripted with the JSON plan.
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

from fake_llm import FakeModel, FakeOpenAI
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
    return pi.wait_record(
        lambda r: (
            r.get("type") == "extension_ui_request"
            and r.get("method") == method
            and str(r.get("message", "")).startswith(starts)
        ),
        timeout_s,
    )


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


def test_dream_in_print_mode_shows_the_plan_and_applies_nothing(world: PiWorld) -> None:
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
    # pi keeps stdout for its own output outside the TUI: extensions write to stderr.
    assert "Dream plan (openai/fake-dreamer)" in out.stderr
    assert "-## SSH gotcha" in out.stderr
    assert "cannot ask for confirmation in print mode: nothing was changed" in out.stderr
    assert _files(world) == {"topic": DEBUGGING, "index": INDEX}
    assert _plan_files_left(world) == []


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
