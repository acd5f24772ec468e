"""``memlane install claude-code --project`` in a folder the real Claude Code has not trusted.

1. Install (the default plugin mode, the project's settings) says plainly that
   Claude Code loads nothing of memlane until the folder is trusted, and how to
   trust it; it does not trust the folder itself.
2. ``claude -p`` there: nothing of memlane is loaded (no hook ran, so no engine
   started and no snapshot reached the model; no memlane tool); ``memlane
   status`` says why and what to do.
3. The folder is trusted the way a person does it: the real ``claude``,
   interactive in a terminal (tmux), shows its trust dialog and the test
   chooses "Yes, I trust this folder". What Claude Code records is what memlane
   reads: ``memlane status`` and install now say the folder is trusted, and the
   next ``claude -p`` loads memlane's hooks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from claude_harness import MEMLANE, ClaudeInstall, ClaudeWorld

from fake_anthropic import FakeClaude, Turn
from helpers import engine_pids, wait_for

pytestmark = pytest.mark.e2e

TMUX = shutil.which("tmux")
SESSION_PREFIX = "memlane-trust-"


@pytest.fixture
def model() -> Iterator[FakeClaude]:
    with FakeClaude(default_text="Hello.") as server:
        yield server


@pytest.fixture
def world(
    claude_install: ClaudeInstall, model: FakeClaude, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClaudeWorld]:
    w = ClaudeWorld(
        claude_install,
        tmp_path_factory.mktemp("cc-folder"),
        model.base_url,
        env_extra={"MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_LLM_PROVIDER": "none"},
    )
    yield w
    w.stop_engine()


def status(world: ClaudeWorld) -> dict[str, Any]:
    out = subprocess.run(
        [MEMLANE, "status", "--json", "--no-probe"],
        cwd=world.project,
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def trusted_in_claude_state(world: ClaudeWorld) -> bool:
    path = world.home / ".claude.json"
    try:
        projects = json.loads(path.read_text()).get("projects") or {}
    except (OSError, ValueError):
        return False
    return bool((projects.get(str(world.project)) or {}).get("hasTrustDialogAccepted"))


def accept_trust_dialog(world: ClaudeWorld) -> None:
    """Start the real claude interactively in the project and choose "Yes, I trust this
    folder" in its trust dialog, as a person would."""
    assert TMUX is not None
    state = world.home / ".claude.json"
    data = json.loads(state.read_text()) if state.exists() else {}
    # A first start would walk through onboarding and ask about the API key first.
    data.update(
        hasCompletedOnboarding=True,
        customApiKeyResponses={"approved": ["sk-ant-fake"], "rejected": []},
    )
    state.write_text(json.dumps(data))
    env = [f"{k}={v}" for k, v in world.env(TERM="xterm-256color").items()]
    name = SESSION_PREFIX + world.root.name
    terminal = ["-x", "160", "-y", "50", "-c", str(world.project)]
    command = ["env", "-i", *env, str(world.claude.exe)]
    subprocess.run([TMUX, "new-session", "-d", "-s", name, *terminal, *command], check=True)
    try:

        def screen() -> str:
            out = subprocess.run(
                [TMUX, "capture-pane", "-p", "-t", name], capture_output=True, text=True
            )
            return out.stdout

        wait_for(lambda: "Yes, I trust this folder" in screen(), 60, "the trust dialog")
        assert str(world.project) in screen()
        # The dialog may redraw while it starts (a busy machine): choose Yes, and once it
        # stays chosen, confirm; again if the dialog is still there.
        for _ in range(10):
            if "❯ Yes, I trust this folder" not in screen():
                subprocess.run([TMUX, "send-keys", "-t", name, "Down"], check=True)
                time.sleep(1)
                continue
            subprocess.run([TMUX, "send-keys", "-t", name, "Enter"], check=True)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not trusted_in_claude_state(world):
                time.sleep(0.1)
            if trusted_in_claude_state(world):
                return
        raise AssertionError(f"Claude Code recorded no trust; the terminal shows:\n{screen()}")
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True)


@pytest.mark.skipif(TMUX is None, reason="tmux runs the interactive claude (apt-get install tmux)")
def test_an_untrusted_project_install_loads_nothing_and_says_how_to_trust_it(
    world: ClaudeWorld, model: FakeClaude
) -> None:
    # 1. install
    lines = world.install(project=True)
    (line,) = [line for line in lines if "has not trusted" in line]
    assert f"Claude Code has not trusted {world.project} yet" in line, lines
    assert "Claude Code loads nothing of memlane there: no hooks, no tools, no skill" in line
    assert f"run `claude` in {world.project} once and accept the trust dialog" in line
    assert not trusted_in_claude_state(world)

    # 2. claude -p in the untrusted folder: nothing of memlane
    model.agent(Turn.say("Hello."))
    result = world.run("hello")
    assert result.returncode == 0, result.stderr
    first = model.agent_requests[-1]
    assert "Project memory (memlane)" not in first.system
    assert not [name for name in first.tool_names if "memlane" in name]
    assert engine_pids(world.memlane_home) == []  # no hook ran
    assert not trusted_in_claude_state(world)
    report = status(world)
    assert report["claude_code"]["scope"] == "project" and not report["claude_code"]["trusted_by"]
    (missing,) = [m for m in report["missing"] if m.startswith("claude code:")]
    assert f"Claude Code has not trusted {world.project}" in missing
    assert "accept the trust dialog" in missing

    # 3. trusted as a person does it: Claude Code's own dialog
    accept_trust_dialog(world)
    report = status(world)
    assert report["claude_code"]["trusted_by"] == str(world.project)
    assert not [m for m in report["missing"] if m.startswith("claude code:")]
    assert f"Claude Code trusts {world.project}" in " ".join(world.install(project=True))
    start = len(model.requests)
    model.agent(Turn.say("Hello again."))
    result = world.run("hello again")
    assert result.returncode == 0, result.stderr
    first = next(r for r in model.requests[start:] if r.kind == "agent")
    assert "Project memory (memlane)" in first.system  # the project's plugin hooks ran
