"""Distillation for Claude Code users (llm/claude_code.py, rule 2 of llm/factory.py):
``llm.provider = "auto"`` inside Claude Code runs the user's own ``claude -p
--model haiku``, as a child that runs no hooks and leaves no transcript; an
explicit ``[llm]`` always wins; a user's ``llm.command`` stays theirs.

A fake ``claude`` on PATH records what it was run with; the real binary's
check is tests/llm/test_llm_claude_code_real.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import NOW, FixedClock
from memlane.core.errors import LlmError
from memlane.core.paths import memlane_home
from memlane.core.settings import LlmSettings
from memlane.llm.budget import USAGE_FILE, BudgetedLLM
from memlane.llm.claude_code import CHILD_FLAGS, WORKDIR, ClaudeCodeLLM
from memlane.llm.command import CommandLLM
from memlane.llm.defaults import CLAUDE_NOT_FOUND_HINT as NOT_FOUND_HINT
from memlane.llm.factory import describe_llm, make_llm, resolve_llm

CLAUDE_CODE = "claude-code"

# Records its argv, cwd, stdin and the environment it cares about, then
# answers as `claude -p --output-format json` does.
FAKE_CLAUDE = """#!{python}
import json, os, sys
record = {{
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "stdin": sys.stdin.read(),
    "no_hooks": os.environ.get("MEMLANE_NO_HOOKS"),
}}
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as log:
    log.write(json.dumps(record) + "\\n")
if "--output-format" not in sys.argv:  # a user's own command line: plain text
    print("- plain answer")
    sys.exit(0)
failing = os.environ.get("FAKE_CLAUDE_FAIL")
print(json.dumps({{
    "type": "result",
    "is_error": bool(failing),
    "result": failing or "- the user moved the cache to Redis",
    "usage": {{"input_tokens": 90, "cache_read_input_tokens": 10, "output_tokens": 12}},
}}))
sys.exit(1 if failing else 0)
"""


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text(FAKE_CLAUDE.format(python=sys.executable))
    program.chmod(0o755)
    log = tmp_path / "claude-calls.jsonl"
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    return program


def _env(program: Path | None) -> dict[str, str]:
    return {"PATH": str(program.parent) if program else "/nonexistent"}


def _calls(program: Path) -> list[dict[str, Any]]:
    log = Path(os.environ["FAKE_CLAUDE_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()]


# ---- when the default is chosen -------------------------------------------------------


def test_auto_inside_claude_code_runs_claude_haiku(fake_claude: Path) -> None:
    choice = resolve_llm(
        LlmSettings(), host_available=False, host=CLAUDE_CODE, env=_env(fake_claude)
    )
    assert choice is not None
    assert (choice.provider, choice.model, choice.claude_code) == ("command", "haiku", True)
    assert choice.command == f"{fake_claude} -p --model haiku"


def test_status_outside_a_session_names_what_claude_code_sessions_distil_with(
    fake_claude: Path,
) -> None:
    """`memlane status` (and a tool call without a session) is asked outside any host:
    it says what each host's sessions use, not "none" while the engine runs haiku."""
    line = describe_llm(LlmSettings(), False, env=_env(fake_claude))
    assert line.startswith(f"auto: in Claude Code command: {fake_claude} -p --model haiku ")
    assert "in pi host (pi's cheapest model)" in line
    line = describe_llm(LlmSettings(capture_model="claude-sonnet-4-5"), False, env=_env(None))
    assert line.startswith(f"auto: in Claude Code none ({NOT_FOUND_HINT})")
    assert "in pi host (claude-sonnet-4-5 via pi)" in line


def test_without_claude_on_path_there_is_no_llm_and_status_says_how_to_configure() -> None:
    settings = LlmSettings()
    assert resolve_llm(settings, host_available=False, host=CLAUDE_CODE, env=_env(None)) is None
    line = describe_llm(settings, False, host=CLAUDE_CODE, env=_env(None))
    assert line == f"none ({NOT_FOUND_HINT})"
    assert "on PATH" in line and 'llm.provider = "anthropic"' in line
    # a plain command would run claude without the child's flags (hooks, MCP, transcript)
    assert 'llm.provider = "command"' not in line


@pytest.mark.parametrize(
    ("configured", "provider"),
    [
        ({"provider": "none"}, None),
        ({"provider": "command", "command": "llm -m gpt-4o-mini"}, "command"),
        ({"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}, "openai"),
        ({"provider": "anthropic", "api_key": "sk-ant"}, "anthropic"),
    ],
)
def test_an_explicit_llm_configuration_wins(
    fake_claude: Path, configured: dict[str, Any], provider: str | None
) -> None:
    choice = resolve_llm(
        LlmSettings(**configured), host_available=False, host=CLAUDE_CODE, env=_env(fake_claude)
    )
    assert (choice.provider if choice else None) == provider
    assert choice is None or not choice.claude_code


def test_other_hosts_keep_their_rules(fake_claude: Path) -> None:
    env = _env(fake_claude)
    assert resolve_llm(LlmSettings(), host_available=False, host="cli", env=env) is None
    inside_pi = resolve_llm(LlmSettings(), host_available=True, host="pi", env=env)
    assert inside_pi is not None and inside_pi.provider == "host"


@pytest.mark.parametrize(
    ("configured", "model"),
    [
        ({"model": "sonnet"}, "sonnet"),
        ({"capture_model": "anthropic/claude-haiku-4-5"}, "claude-haiku-4-5"),
        ({"capture_model": "openai/gpt-4o-mini"}, "haiku"),  # pi's model, not Claude's
    ],
)
def test_a_claude_model_setting_picks_the_childs_model(
    fake_claude: Path, configured: dict[str, Any], model: str
) -> None:
    choice = resolve_llm(
        LlmSettings(**configured), host_available=False, host=CLAUDE_CODE, env=_env(fake_claude)
    )
    assert choice is not None and choice.model == model


# ---- how the child runs ---------------------------------------------------------------


def test_the_child_runs_without_hooks_mcp_or_transcript_outside_the_project(
    fake_claude: Path,
) -> None:
    llm = make_llm(LlmSettings(), host=CLAUDE_CODE, env=_env(fake_claude), clock=FixedClock(NOW))
    assert isinstance(llm, BudgetedLLM) and isinstance(llm.inner, ClaudeCodeLLM)
    assert llm.name == "claude-code/haiku"
    answer = llm.complete("Distil the exchange.", "user: move the cache\nassistant: done")
    assert answer == "- the user moved the cache to Redis"
    (call,) = _calls(fake_claude)
    assert call["argv"][:3] == ["-p", "--model", "haiku"]
    for flag in ("--safe-mode", "--strict-mcp-config", "--no-session-persistence"):
        assert flag in call["argv"]
    assert call["argv"][call["argv"].index("--tools") + 1] == ""
    assert call["argv"][-1] == "--system-prompt=Distil the exchange."
    assert list(CHILD_FLAGS) == call["argv"][3 : 3 + len(CHILD_FLAGS)]
    assert call["stdin"] == "user: move the cache\nassistant: done"
    assert call["no_hooks"] == "1"
    assert Path(call["cwd"]) == memlane_home() / WORKDIR
    # The tokens claude reported (cache reads are input) count against the budget.
    usage = json.loads((memlane_home() / USAGE_FILE).read_text())
    assert (usage["tokens_reported"], usage["tokens_estimated"]) == (112, 0)


def test_a_failing_child_says_what_claude_said(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_FAIL", "Not logged in · Please run /login")
    llm = ClaudeCodeLLM(f"{fake_claude} -p --model haiku", model="haiku")
    with pytest.raises(LlmError) as failed:
        llm.complete("sys", "prompt")
    assert failed.value.message == "claude -p failed: Not logged in · Please run /login"
    assert "claude -p" in (failed.value.hint or "")


def test_a_users_command_stays_theirs_but_runs_no_hooks(fake_claude: Path) -> None:
    configured = LlmSettings(provider="command", command=f"{fake_claude} -p --model sonnet")
    llm = make_llm(configured, host=CLAUDE_CODE, env=_env(fake_claude), clock=FixedClock(NOW))
    assert isinstance(llm, BudgetedLLM) and type(llm.inner) is CommandLLM
    assert llm.complete("sys", "prompt") == "- plain answer"
    (call,) = _calls(fake_claude)
    assert call["argv"] == ["-p", "--model", "sonnet"]  # verbatim: no flags added
    assert call["stdin"] == "sys\n\nprompt"
    assert call["no_hooks"] == "1"
    assert Path(call["cwd"]) == Path.cwd()
