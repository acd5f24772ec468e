"""A command-line LLM: the prompt goes in on stdin, the answer comes out on
stdout (``claude -p --model haiku``, ``llm -m gpt-4o-mini``, ``ollama run
qwen3``...). The command line is the user's own: memlane adds no model or
flags to it. Its environment is memlane's plus ``MEMLANE_NO_HOOKS=1``, so a
coding agent run as the command (``claude -p`` is one) runs none of
memlane's hooks: distilling an exchange must not capture another one.
(memlane's own default inside Claude Code is llm/claude_code.py.)

The command runs in its own session, hence its own process group, so the
deadline can kill everything it started (a wrapper script's children
included) and leave no orphan behind.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import ConfigError, LlmError
from memlane.llm._deadline import timed_out
from memlane.llm._text import one_line
from memlane.llm.base import DEFAULT_MAX_TOKENS

if TYPE_CHECKING:
    from memlane.llm.factory import HostCall, LlmChoice

#: Set in every command's environment; memlane's hook client exits at once when it is set.
NO_HOOKS_ENV = "MEMLANE_NO_HOOKS"

# After the group is killed, how long to wait for the pipes to close; a
# grandchild that left the group could otherwise hold them open forever.
_REAP_S = 1.0


class CommandLLM:
    def __init__(self, command: str, *, model: str | None = None, timeout_s: float = 30.0) -> None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"llm.command cannot be parsed: {exc}", "check its quoting") from None
        if not argv:
            raise ConfigError(
                "provider command needs llm.command", 'e.g. llm.command = "claude -p --model haiku"'
            )
        self.command = command
        self.argv = argv
        self.model = model
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"CommandLLM(command={self.command!r})"

    @property
    def name(self) -> str:
        return f"command/{self.model or Path(self.argv[0]).name}"

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        # max_tokens cannot be passed to an arbitrary CLI; the prompt asks for brevity.
        budget = self.timeout_s if timeout_s is None else timeout_s
        stdin = f"{system}\n\n{prompt}" if system else prompt
        answer = self.run(self.argv, stdin, budget).decode("utf-8", errors="replace").strip()
        if not answer:
            raise LlmError("empty answer", f"{self.argv[0]} printed nothing on stdout")
        return answer

    def child_env(self) -> dict[str, str]:
        """The command's environment: memlane's own, with the hooks guard set."""
        return {**os.environ, NO_HOOKS_ENV: "1"}

    def run(self, argv: list[str], stdin: str, budget: float, cwd: Path | None = None) -> bytes:
        """Run *argv* with *stdin* under the deadline; its stdout, or ``LlmError``."""
        returncode, out, err = self.spawn(argv, stdin, budget, cwd)
        if returncode != 0:
            raise LlmError(exit_reason(argv[0], returncode, err), self.failure_hint)
        return out

    def spawn(
        self, argv: list[str], stdin: str, budget: float, cwd: Path | None = None
    ) -> tuple[int, bytes, bytes]:
        """Run *argv* under the deadline: its exit status, stdout and stderr."""
        program = argv[0]
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=self.child_env(),
                cwd=cwd,
            )
        except FileNotFoundError:
            raise LlmError(
                f"command not found: {program}",
                "check llm.command; the program must be installed and on PATH",
            ) from None
        except PermissionError:
            raise LlmError(
                f"command not executable: {program}", "check llm.command and the file's mode"
            ) from None
        except OSError as exc:
            raise LlmError(
                f"cannot run {program}: {one_line(str(exc))}", "check llm.command"
            ) from None
        try:
            out, err = process.communicate(stdin.encode("utf-8"), timeout=max(0.0, budget))
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise timed_out(
                budget, f"{program} did not answer in time; raise llm.timeout_s"
            ) from None
        except BaseException:
            _kill_group(process)
            raise
        return process.returncode, out, err

    #: What a failing command's error suggests.
    failure_hint = "check llm.command"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The process is not reaped yet (returncode is None) or, if it is, a
    # member of its group still holds the pipes open: either way the group
    # id cannot have been reused, so killpg hits only what we started.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=_REAP_S)
    except subprocess.TimeoutExpired:
        # A grandchild escaped the group and holds a pipe: stop waiting for it.
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait(timeout=_REAP_S)


def exit_reason(program: str, returncode: int, stderr: bytes) -> str:
    if returncode < 0:
        try:
            status = f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            status = f"was killed by signal {-returncode}"
    else:
        status = f"exited with status {returncode}"
    lines = [line for line in stderr.decode("utf-8", errors="replace").splitlines() if line.strip()]
    detail = f": {one_line(lines[-1])}" if lines else ""
    return f"{program} {status}{detail}"


def from_choice(choice: LlmChoice, host_call: HostCall | None = None) -> CommandLLM:
    """Provider ``command`` of the LLM registry (llm/factory.py)."""
    assert choice.command is not None
    return CommandLLM(choice.command, model=choice.model, timeout_s=choice.timeout_s)
