"""The hook command ↔ the warm engine, per Claude Code hook event (issue 16, items 2 and 3).

Every test runs the real hook command (``python -I -S hook.py``) as Claude
Code does, with Claude Code-shaped input and transcripts; the engine it
starts is a real process. ``MEMLANE_HOME`` sits under pytest's long temp
path, so the socket takes its short fallback path under /tmp.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cc import Hooks, daily_text, engine_pids, finish

from _transcript_builders import ClaudeSession
from helpers import open_memory, wait_for
from memlane.core import engine_client
from memlane.engine.tools.dispatch import Tools

pytestmark = pytest.mark.subprocess

SESSION = "5d9c0e7a-1111-4222-8333-944455556666"


@pytest.fixture
def hooks(isolated_home: Path, project: Path) -> Iterator[Hooks]:
    hooks = Hooks(isolated_home, project)
    yield hooks
    hooks.stop_engines()


def write_turn(project: Path, session_id: str = SESSION, *, question: str, answer: str) -> str:
    """A transcript whose last turn asks *question*; the final assistant line's uuid."""
    t = ClaudeSession(session_id)
    t.user("an earlier question")
    t.assistant([{"type": "text", "text": "an earlier answer"}], msg_id="msg_00")
    t.user(question)
    t.assistant([{"type": "thinking", "thinking": "hmm", "signature": "x"}], msg_id="msg_01")
    t.assistant(
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
        msg_id="msg_01",
    )
    t.tool_result("toolu_1", "README.md")
    last = t.assistant([{"type": "text", "text": answer}], msg_id="msg_02")
    t.write(project / f"{session_id}.jsonl")
    return last


def test_a_long_memlane_home_gets_a_short_private_socket_path(
    tmp_path: Path, project: Path
) -> None:
    home = tmp_path / ("a-long-directory-name-" * 5) / "memlane-home"
    home.mkdir(parents=True)
    # What another local user could do: create /tmp/memlane-<uid> first, open to all.
    # No socket is ever put at a name someone else can create.
    squatted = Path(f"/tmp/memlane-{os.getuid()}")
    made = not squatted.exists()
    if made:
        squatted.mkdir()
        squatted.chmod(0o777)
    long_home = Hooks(home, project)
    try:
        out = long_home.call("SessionStart", SESSION, source="startup")
        assert out is not None and out["hookSpecificOutput"]["additionalContext"]
        path = long_home.place().socket_path()
        assert path is not None and len(path.encode()) <= 100
        assert Path(path).is_socket() and Path(path).parent != squatted
        assert (Path(path).parent.stat().st_mode & 0o777) == 0o700
    finally:
        long_home.stop_engines()
        if made:
            squatted.rmdir()
    # The engine took its private directory away with it.
    assert not Path(path).parent.exists()


def test_session_start_gives_the_snapshot_and_a_status_line(hooks: Hooks) -> None:
    out = hooks.call("SessionStart", SESSION, source="startup")
    assert out is not None
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert "Project memory (memlane)" in specific["additionalContext"]
    assert out["systemMessage"].startswith("memlane: memory on")
    assert "\n" not in out["systemMessage"]
    assert len(engine_pids(hooks.home)) == 1
    assert hooks.failures() == []


def test_stop_captures_the_settled_exchange_once_with_its_anchor(
    hooks: Hooks, project: Path
) -> None:
    hooks.call("SessionStart", SESSION, source="startup")
    turn = write_turn(
        project,
        question="why does the deploy script need sudo?",
        answer="It writes to /etc/systemd; I switched it to a user unit instead.",
    )
    transcript = project / f"{SESSION}.jsonl"
    assert hooks.call("Stop", SESSION, stop_hook_active=False) is None
    anchor = f"<!-- session:{SESSION} turn:{turn} transcript:{transcript} -->"
    wait_for(lambda: anchor in daily_text(project), what="the anchored entry")
    assert "user unit" in daily_text(project)
    # The same turn again (a retried or repeated Stop): nothing written twice.
    hooks.call("Stop", SESSION)
    assert hooks.call("SessionEnd", SESSION, reason="other") is None
    assert daily_text(project).count(f"turn:{turn}") == 1
    assert hooks.failures() == []
    # L3: the agent's memory_transcript follows the anchor back to the turn.
    with open_memory(project) as memory:
        result = Tools(memory).call(
            "memory_transcript", {"transcript_path": str(transcript), "turn": turn}
        )
    text = result.text
    assert "why does the deploy script need sudo?" in text
    assert "user unit" in text


def test_a_duplicate_stop_after_an_engine_restart_writes_nothing_twice(
    hooks: Hooks, project: Path
) -> None:
    turn = write_turn(project, question="where do the logs go?", answer="To /var/log/app.")
    hooks.call("Stop", SESSION)
    wait_for(lambda: f"turn:{turn}" in daily_text(project), what="the entry")
    hooks.stop_engines()
    hooks.call("Stop", SESSION)  # a new engine, which never saw the first Stop
    hooks.call("SessionEnd", SESSION)
    assert daily_text(project).count(f"turn:{turn}") == 1


def test_a_session_end_with_no_engine_running_starts_none(hooks: Hooks, project: Path) -> None:
    """Claude Code gives a plugin's SessionEnd hooks 1.5 s at exit: starting an engine
    takes longer, and a new engine has no session to end."""
    turn = write_turn(project, question="which queue?", answer="The retry queue.")
    hooks.call("Stop", SESSION)
    wait_for(lambda: f"turn:{turn}" in daily_text(project), what="the entry")
    hooks.stop_engines()
    assert hooks.call("SessionEnd", SESSION, reason="other") is None
    assert engine_pids(hooks.home) == []
    assert hooks.failures() == []
    assert daily_text(project).count(f"turn:{turn}") == 1


def test_a_new_session_of_the_same_claude_code_process_ends_the_previous_one(
    hooks: Hooks, project: Path
) -> None:
    """No SessionEnd hook is installed (ADR 0023): a Claude Code process that starts
    another session (/clear, /resume) is done with the one before, whose captures the
    engine writes as a SessionEnd would."""
    turn = write_turn(project, question="which broker?", answer="RabbitMQ, quorum queues.")
    hooks.call("SessionStart", SESSION, source="startup")
    hooks.call("Stop", SESSION)
    other = "7e1f0a2b-2222-4333-8444-a55566667777"
    hooks.call("SessionStart", other, source="clear")  # the same parent process
    log = Path(hooks.place().log)
    wait_for(
        lambda: (
            f"session {SESSION[:8]}: its agent (pid {os.getpid()}) went on with "
            f"{other[:8]}: ending it" in log.read_text()
        ),
        what="the first session ended",
    )
    wait_for(lambda: f"turn:{turn}" in daily_text(project), what="its capture")
    assert f"session {other[:8]}" not in log.read_text().split("went on with")[-1]
    assert hooks.failures() == []


def test_memory_status_over_mcp_names_the_llm_claude_code_sessions_distil_with(
    hooks: Hooks, project: Path, tmp_path: Path
) -> None:
    """The engine distils Claude Code's exchanges with `claude -p --model haiku`:
    memory_status from Claude Code's MCP server (it names its session) says so,
    and so does a client outside any host, for each host."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    hooks.env["PATH"] = f"{bin_dir}{os.pathsep}{hooks.env.get('PATH', '')}"
    hooks.env["MEMLANE_LLM_PROVIDER"] = "auto"
    out = hooks.call("SessionStart", SESSION, source="startup")  # the engine, with that PATH
    assert out is not None and "no LLM for distillation" not in out["systemMessage"]
    in_claude = f"command: {claude} -p --model haiku (Claude Code's, without hooks or a transcript)"
    lines = {}
    for meta in ({"agent_session": SESSION}, {}):
        with engine_client.Client.open(
            hooks.place(), "mcp", str(project), time.monotonic() + 30, start=False, **meta
        ) as client:
            result = client.call("tool", {"name": "memory_status", "arguments": {}}, 60)
        assert isinstance(result, dict)
        lines[bool(meta)] = result["details"]["capture"]["llm"]
    assert lines[True] == in_claude
    assert lines[False].startswith(f"auto: in Claude Code {in_claude}; in pi "), lines[False]
    hooks.call("SessionEnd", SESSION, reason="other")


def test_user_prompt_submit_injects_matching_memory(hooks: Hooks, project: Path) -> None:
    auto = {
        "MEMLANE_AUTO_CONTEXT": "on",
        "MEMLANE_AUTO_CONTEXT_SCORE_FLOOR": "0",
        # A loaded test machine: the search's deadline is not under test here.
        "MEMLANE_AUTO_CONTEXT_CAP_MS": "2000",
    }
    hooks.env.update(auto)
    hooks.call("SessionStart", SESSION, source="startup")
    # Another session, opened before the capture: its snapshot does not hold the
    # entry (what the snapshot holds is never injected again), and a session's
    # own entries are never injected back into it.
    later = "later-session"
    hooks.call("SessionStart", later, source="startup")
    write_turn(
        project,
        question="which port does the staging database listen on?",
        answer="The staging database listens on port 6543 behind pgbouncer.",
    )
    hooks.call("Stop", SESSION)
    wait_for(lambda: "6543" in daily_text(project), what="the captured entry")

    def injected() -> bool:
        out = hooks.call("UserPromptSubmit", later, prompt="staging database port pgbouncer")
        return out is not None and "6543" in out["hookSpecificOutput"]["additionalContext"]

    wait_for(injected, 30, "auto-context with the captured entry")
    out = hooks.call("UserPromptSubmit", later, prompt="staging database port pgbouncer")
    assert out is not None
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_compaction_rebuilds_the_snapshot(hooks: Hooks, project: Path) -> None:
    first = hooks.call("SessionStart", SESSION, source="startup")
    assert first is not None
    assert "quartz" not in first["hookSpecificOutput"]["additionalContext"]
    write_turn(project, question="what is the codename?", answer="The codename is quartz.")
    hooks.call("Stop", SESSION)
    wait_for(lambda: "quartz" in daily_text(project), what="the captured entry")
    assert hooks.call("PreCompact", SESSION, trigger="auto") is None
    out = hooks.call("SessionStart", SESSION, source="compact")
    assert out is not None
    assert "quartz" in out["hookSpecificOutput"]["additionalContext"]


def test_no_hooks_does_nothing(hooks: Hooks) -> None:
    out = hooks.call("SessionStart", SESSION, env={"MEMLANE_NO_HOOKS": "1"}, source="startup")
    assert out is None
    assert engine_pids(hooks.home) == []
    assert not (hooks.home / "engine").exists()


def test_stop_hook_active_captures_nothing(hooks: Hooks, project: Path) -> None:
    write_turn(project, question="what is the codename?", answer="The codename is quartz.")
    assert hooks.call("Stop", SESSION, stop_hook_active=True) is None
    assert engine_pids(hooks.home) == []
    assert daily_text(project) == ""


def test_a_subagent_turn_and_tool_results_are_not_the_prompt(hooks: Hooks, project: Path) -> None:
    t = ClaudeSession(SESSION)
    t.user("rename the config loader")
    t.assistant(
        [{"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"prompt": "x"}}],
        msg_id="msg_01",
    )
    t.user("subagent's own prompt", sidechain=True, advance=False)
    t.assistant(
        [{"type": "text", "text": "subagent text"}], msg_id="msg_s", sidechain=True, advance=False
    )
    t.tool_result("toolu_1", "done")
    last = t.assistant([{"type": "text", "text": "Renamed it to load_settings."}], msg_id="msg_02")
    t.write(project / f"{SESSION}.jsonl")
    hooks.call("Stop", SESSION)
    wait_for(lambda: f"turn:{last}" in daily_text(project), what="the entry")
    text = daily_text(project)
    assert "rename the config loader" in text
    assert "subagent text" not in text
    assert "own prompt" not in text
    assert "agent answered: Renamed it to load_settings." in text


def test_an_async_stop_racing_the_session_end_is_still_captured(
    hooks: Hooks, project: Path
) -> None:
    hooks.call("SessionStart", SESSION, source="startup")
    turn = write_turn(project, question="what is the codename?", answer="The codename is quartz.")
    stop = hooks.start("Stop", SESSION)  # Claude Code runs Stop in the background
    end = hooks.start("SessionEnd", SESSION, reason="prompt_input_exit")
    finish(stop)
    finish(end)
    wait_for(lambda: f"turn:{turn}" in daily_text(project), what="the captured entry")
    assert daily_text(project).count(f"turn:{turn}") == 1


def test_the_final_answer_named_by_the_stop_input_is_captured(hooks: Hooks, project: Path) -> None:
    t = ClaudeSession(SESSION)
    t.user("is the cache warm?")
    turn = t.assistant(
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "x"}}],
        msg_id="msg_01",
    )
    t.tool_result("toolu_1", "ok")
    t.write(project / f"{SESSION}.jsonl")  # the final text line is not in the file yet
    hooks.call("Stop", SESSION, last_assistant_message="Yes, the cache is warm.")
    wait_for(lambda: f"turn:{turn}" in daily_text(project), what="the entry")
    assert "the cache is warm" in daily_text(project)


def test_a_stop_before_the_answer_is_written_captures_it_and_a_later_stop_does_not_again(
    hooks: Hooks, project: Path
) -> None:
    t = ClaudeSession(SESSION)
    prompt = t.user("which port does staging use?")
    t.write(project / f"{SESSION}.jsonl")  # no assistant line yet
    hooks.call("Stop", SESSION, last_assistant_message="Staging listens on 8443.")
    wait_for(lambda: f"turn:{prompt}" in daily_text(project), what="the entry")
    assert "8443" in daily_text(project)
    t.assistant([{"type": "text", "text": "Staging listens on 8443."}], msg_id="msg_01")
    t.write(project / f"{SESSION}.jsonl")
    hooks.call("Stop", SESSION, last_assistant_message="Staging listens on 8443.")
    hooks.stop_engines()
    hooks.call("Stop", SESSION)  # a new engine: its anchor is the earlier Stop's
    hooks.call("SessionEnd", SESSION)
    assert daily_text(project).count(f"session:{SESSION}") == 1
    assert hooks.failures() == []


def test_a_new_session_starts_with_the_settings_as_they_are_now(
    hooks: Hooks, isolated_home: Path
) -> None:
    """The engine outlives sessions: settings changed between two sessions apply to the next."""
    first = hooks.call("SessionStart", SESSION, source="startup")
    assert first is not None and "capture off" not in first["systemMessage"]
    hooks.call("SessionEnd", SESSION, reason="prompt_input_exit")
    (isolated_home / "config.toml").write_text("[capture]\nenabled = false\n")
    second = hooks.call("SessionStart", "7e1f0a2b-2222-4333-8444-a55566667777", source="startup")
    assert second is not None and "capture off" in second["systemMessage"], second
    assert len(engine_pids(hooks.home)) == 1  # the same engine, the project opened again
