"""CommandLLM with real processes: small Python scripts standing in for `claude -p`."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from fake_llm import wait_until
from memlane.core.errors import ConfigError, LlmError
from memlane.llm.command import CommandLLM


def script(tmp_path: Path, body: str, name: str = "fake_llm.py") -> str:
    """A command line running ``body`` with this interpreter."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def failure(llm: CommandLLM, **kwargs: float) -> LlmError:
    with pytest.raises(LlmError) as info:
        llm.complete("system", "prompt", **kwargs)
    assert "\n" not in info.value.message
    return info.value


def running(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped by init) does not count."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state and "dead" not in state


def test_answer_from_stdout_with_prompt_on_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "stdin.txt"
    command = script(
        tmp_path,
        f"""
        import sys
        text = sys.stdin.read()
        open({str(seen)!r}, "w").write(text)
        print("  - remembered", len(text), "chars  ")
        """,
    )
    llm = CommandLLM(command + " --model 'cheap one'", timeout_s=5)
    assert llm.name == "command/" + Path(sys.executable).name
    answer = llm.complete("be brief", "what happened?")
    sent = "be brief\n\nwhat happened?"
    assert seen.read_text() == sent
    assert answer == f"- remembered {len(sent)} chars"


def test_arguments_are_split_like_a_shell(tmp_path: Path) -> None:
    command = script(tmp_path, "import sys; print(repr(sys.argv[1:]))")
    llm = CommandLLM(command + " -p --model 'haiku 4.5'", timeout_s=5)
    assert llm.complete("", "x") == "['-p', '--model', 'haiku 4.5']"


def test_model_is_shown_not_injected(tmp_path: Path) -> None:
    command = script(tmp_path, "import sys; print(sys.argv[1:])")
    llm = CommandLLM(command, model="haiku", timeout_s=5)
    assert llm.name == "command/haiku"
    assert llm.complete("s", "p") == "[]"


def test_non_zero_exit_reports_the_last_stderr_line(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        """
        import sys
        sys.stdin.read()
        print("partial answer")
        sys.stderr.write("warming up\\nError: not logged in, run /login" + " !" * 300 + "\\n\\n  \\n")
        sys.exit(3)
        """,
    )
    error = failure(CommandLLM(command, timeout_s=5))
    assert error.message.startswith(
        f"{sys.executable} exited with status 3: Error: not logged in, run /login !"
    )
    assert len(error.message) < len(sys.executable) + 250


def test_killed_by_a_signal(tmp_path: Path) -> None:
    command = script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert failure(CommandLLM(command, timeout_s=5)).message.endswith("was killed by SIGTERM")


@pytest.mark.subprocess
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = script(
        tmp_path,
        f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(60)
        """,
    )
    llm = CommandLLM(command, timeout_s=30)
    error = failure(llm, timeout_s=1.0)
    assert error.message == "timed out after 1 s"
    parent, child = (int(pid) for pid in pids.read_text().split())
    gone = wait_until(lambda: not running(parent) and not running(child), timeout_s=10)
    assert gone, "orphan left behind"


@pytest.mark.subprocess
def test_timeout_with_output_held_open_by_a_grandchild(tmp_path: Path) -> None:
    # The command exits at once but its background child keeps stdout open.
    pid_file = tmp_path / "pid"
    command = script(
        tmp_path,
        f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("early")
        """,
    )
    assert failure(CommandLLM(command), timeout_s=0.8).message == "timed out after 0.8 s"
    grandchild = int(pid_file.read_text())
    assert wait_until(lambda: not running(grandchild), timeout_s=10), "grandchild left behind"


@pytest.mark.parametrize("output", ["", "print()", "print('   \\n\\t')"])
def test_empty_answer(tmp_path: Path, output: str) -> None:
    command = script(tmp_path, f"import sys; sys.stdin.read(); {output}")
    error = failure(CommandLLM(command, timeout_s=5))
    assert error.message == "empty answer"


def test_a_command_that_ignores_stdin(tmp_path: Path) -> None:
    command = script(tmp_path, "print('fine')")
    assert CommandLLM(command, timeout_s=5).complete("s", "p" * 1_000_000) == "fine"


def test_missing_binary() -> None:
    error = failure(CommandLLM("memlane-no-such-llm-cli -p", timeout_s=5))
    assert error.message == "command not found: memlane-no-such-llm-cli"
    assert error.hint is not None and "PATH" in error.hint


def test_file_that_is_not_executable(tmp_path: Path) -> None:
    path = tmp_path / "llm.sh"
    path.write_text("#!/bin/sh\necho hi\n")
    os.chmod(path, 0o644)
    assert failure(CommandLLM(str(path))).message == f"command not executable: {path}"


@pytest.mark.parametrize("command", ["", "   ", "claude -p 'unclosed"])
def test_bad_command_line_is_a_config_error(command: str) -> None:
    with pytest.raises(ConfigError):
        CommandLLM(command)
