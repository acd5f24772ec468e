"""The warm engine's life: one per user, gone when idle, nothing lost to a kill (issue 16, item 3).

Real processes throughout: the hook command as Claude Code runs it and the
engines it starts, counted from /proc by their ``MEMLANE_HOME``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cc import HOOK, Hooks, daily_text, engine_pids, finish, memlane_pids
from test_cc_hooks import SESSION, write_turn

from helpers import run_memlane, wait_for
from memlane.core.scope import resolve_scope
from memlane.engine.journal.capture_log import capture_log_dir
from memlane.engine.journal.capture_recovery import summary
from memlane.hosts.claude_code import running

pytestmark = pytest.mark.subprocess


@pytest.fixture
def hooks(isolated_home: Path, project: Path) -> Iterator[Hooks]:
    hooks = Hooks(isolated_home, project)
    yield hooks
    hooks.stop_engines()


def test_twenty_concurrent_hooks_with_no_engine_start_exactly_one(hooks: Hooks) -> None:
    procs = [hooks.start("SessionStart", f"session-{n}", source="startup") for n in range(20)]
    outputs = [finish(proc) for proc in procs]
    assert len(engine_pids(hooks.home)) == 1
    answered = [out for out in outputs if out is not None]
    # A hook that missed its limit on a loaded machine prints nothing and is counted.
    assert len(answered) + len(hooks.failures()) == 20
    assert answered, "no hook got the snapshot"
    for out in answered:
        assert out["hookSpecificOutput"]["additionalContext"]


def test_after_session_end_and_the_idle_time_no_memlane_process_is_left(hooks: Hooks) -> None:
    hooks.env["MEMLANE_DAEMON_IDLE_S"] = "1"
    hooks.call("SessionStart", SESSION, source="startup")
    hooks.call("UserPromptSubmit", SESSION, prompt="hello")
    assert len(engine_pids(hooks.home)) == 1
    hooks.call("SessionEnd", SESSION, reason="prompt_input_exit")
    wait_for(lambda: not memlane_pids(hooks.home), 30, "every memlane process gone")
    assert not Path(hooks.place().preferred_socket()).exists()
    log = Path(hooks.place().log).read_text()
    assert "idle for" in log


def test_sigterm_ends_the_open_sessions_with_their_captures_written(
    hooks: Hooks, project: Path
) -> None:
    hooks.call("SessionStart", SESSION, source="startup")
    turn = write_turn(project, question="what is the codename?", answer="The codename is quartz.")
    hooks.call("Stop", SESSION)
    (pid,) = engine_pids(hooks.home)
    os.kill(pid, signal.SIGTERM)
    hooks.wait_engine_gone()
    assert daily_text(project).count(f"turn:{turn}") == 1


def test_an_engine_killed_mid_capture_loses_nothing(hooks: Hooks, project: Path) -> None:
    # Distillation hangs, so the capture is logged and not yet written when the kill comes.
    hanging = {"MEMLANE_LLM_PROVIDER": "command", "MEMLANE_LLM_COMMAND": "sleep 120"}
    hooks.call("SessionStart", SESSION, env=hanging, source="startup")
    turn = write_turn(project, question="where do the logs go?", answer="To /var/log/app.")
    hooks.call("Stop", SESSION, env=hanging)
    (pid,) = engine_pids(hooks.home)
    logs = capture_log_dir(resolve_scope(project))
    assert summary(logs)["queued"] == 1  # on disk, held by the live engine
    assert f"turn:{turn}" not in daily_text(project)
    os.killpg(pid, signal.SIGKILL)  # the engine and its hanging distiller
    hooks.wait_engine_gone()
    # The next hook of that session starts a new engine, which writes what the killed one left.
    hooks.call("UserPromptSubmit", SESSION, prompt="and the metrics?")
    assert len(engine_pids(hooks.home)) == 1
    wait_for(lambda: f"turn:{turn}" in daily_text(project), 30, "the recovered entry")
    hooks.call("Stop", SESSION)  # the same turn again: still one entry
    hooks.call("SessionEnd", SESSION)
    assert daily_text(project).count(f"turn:{turn}") == 1
    assert summary(logs)["recovered"] == 1


class StuckEngine:
    """A process-less stand-in at the engine's socket that accepts and never answers,
    or answers an error."""

    def __init__(self, hooks: Hooks, *, answer: bytes | None, first: bytes | None = None) -> None:
        path = hooks.place().preferred_socket()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(8)
        self.answer = answer
        self.first = first  # the answer to the first connection, when it differs
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            answer, self.first = (self.answer, None) if self.first is None else (self.first, None)
            if answer is None:
                self.held.append(conn)
            else:
                conn.recv(1 << 20)
                conn.sendall(answer)
                conn.close()

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


def test_a_slow_engine_costs_the_session_nothing_and_is_counted(
    hooks: Hooks, project: Path
) -> None:
    stuck = StuckEngine(hooks, answer=None)
    try:
        assert hooks.call("UserPromptSubmit", SESSION, prompt="hello") is None
    finally:
        stuck.close()
    (failure,) = hooks.failures()
    assert failure["event"] == "UserPromptSubmit"
    assert failure["what"] == "slow"
    status = run_memlane("status", "--json", cwd=project, env=hooks.env)
    assert json.loads(status.stdout)["hooks"]["slow"] == 1
    text = run_memlane("status", cwd=project, env=hooks.env).stdout
    assert "client failures" in text and "0 failed, 1 slow" in text
    assert "claude-code hook UserPromptSubmit" in text


def test_a_failing_engine_costs_the_session_nothing_and_is_counted(
    hooks: Hooks, project: Path
) -> None:
    stuck = StuckEngine(hooks, answer=b"error\ninternal error: boom")
    try:
        assert hooks.call("SessionStart", SESSION, source="startup") is None
    finally:
        stuck.close()
    (failure,) = hooks.failures()
    assert failure["what"] == "failed" and "boom" in failure["detail"]
    text = run_memlane("status", cwd=project, env=hooks.env).stdout
    assert "1 failed, 0 slow" in text


def test_an_engine_that_closes_without_answering_is_asked_again(hooks: Hooks) -> None:
    # An engine going away may accept a call and close it unanswered: the hook asks once more.
    output = b'ok\n{"systemMessage": "memlane: memory on"}'
    stuck = StuckEngine(hooks, answer=output, first=b"")
    try:
        out = hooks.call("SessionStart", SESSION, source="startup")
    finally:
        stuck.close()
    assert out == {"systemMessage": "memlane: memory on"}
    assert hooks.failures() == []


def test_an_engine_directory_others_may_write_to_is_never_used(hooks: Hooks) -> None:
    directory = Path(hooks.place().directory)
    directory.mkdir(parents=True)
    directory.chmod(0o777)
    assert hooks.call("SessionStart", SESSION, source="startup") is None
    assert engine_pids(hooks.home) == []
    assert not list(directory.iterdir())  # nothing written where others may write


def test_an_engine_whose_socket_is_gone_exits(hooks: Hooks, project: Path) -> None:
    hooks.call("SessionStart", SESSION, source="startup")
    turn = write_turn(project, question="what is the codename?", answer="The codename is quartz.")
    hooks.call("Stop", SESSION)
    assert len(engine_pids(hooks.home)) == 1
    (old,) = engine_pids(hooks.home)
    Path(hooks.place().preferred_socket()).unlink()  # MEMLANE_HOME wiped, say: no hook finds it
    # The next hook starts an engine, which takes over once the old one has gone.
    out = hooks.call("SessionStart", "next-session", source="startup")
    assert out is not None
    wait_for(lambda: old not in engine_pids(hooks.home), what="the unreachable engine exits")
    assert len(engine_pids(hooks.home)) == 1
    assert daily_text(project).count(f"turn:{turn}") == 1  # its sessions were ended first


def test_the_engine_keeps_none_of_the_starting_sessions_variables(hooks: Hooks) -> None:
    claude = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": SESSION, "CLAUDE_PID": "1"}
    hooks.call("SessionStart", SESSION, env={**claude, "ANTHROPIC_BASE_URL": "http://x"})
    (pid,) = engine_pids(hooks.home)
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    names = {line.split(b"=", 1)[0].decode() for line in environ if line}
    assert not names & set(claude)
    assert "ANTHROPIC_BASE_URL" in names  # what a distilling claude -p needs is kept


def test_an_engine_that_dies_at_start_fails_the_hook_at_once(hooks: Hooks) -> None:
    broken = {"MEMLANE_LOG_LEVEL": "NO-SUCH-LEVEL"}  # the engine's logging refuses it
    assert hooks.call("UserPromptSubmit", SESSION, env=broken, prompt="hello") is None
    (failure,) = hooks.failures()
    assert failure["what"] == "failed"
    assert "the engine exited at start" in failure["detail"]
    assert hooks.place().log in failure["detail"]


def test_a_bad_idle_setting_leaves_the_engine_serving(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.hosts.server import process

    monkeypatch.setenv("MEMLANE_ENGINE_IDLE_S", "soon")
    assert process.configured_idle_s() == process.DEFAULT_IDLE_S
    (isolated_home / "config.toml").write_text("[engine]\nidle_s = 'later'\n")
    monkeypatch.delenv("MEMLANE_ENGINE_IDLE_S")
    assert process.configured_idle_s() == process.DEFAULT_IDLE_S


def test_a_session_whose_claude_code_died_without_session_end_is_ended(
    hooks: Hooks, project: Path
) -> None:
    # The hook's parent stands for Claude Code: a process that runs it, then exits.
    parent = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
    payload = json.dumps(hooks.payload("SessionStart", SESSION, source="startup")).encode()
    subprocess.run(
        [sys.executable, "-c", parent, sys.executable, "-I", "-S", str(HOOK)],
        input=payload,
        env=hooks.env,
        cwd=project,
        check=True,
        timeout=60,
    )
    assert hooks.failures() == []
    records = running.records_dir() / f"{resolve_scope(project).collection}.json"
    assert SESSION in json.loads(records.read_text())["sessions"]
    wait_for(
        lambda: SESSION not in json.loads(records.read_text())["sessions"],
        30,
        "the engine ends the session of a Claude Code that is gone",
    )
    log = Path(hooks.place().log).read_text()
    assert f"session {SESSION[:8]}: its agent" in log
    assert engine_pids(hooks.home)  # ended by the engine, which still serves
