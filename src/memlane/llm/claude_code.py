"""memlane's default LLM for Claude Code users: the user's own ``claude``
binary run as ``claude -p --model haiku`` (llm/factory.py chooses it when
``llm.provider`` is ``auto`` inside Claude Code and ``claude`` is on PATH;
finding it and the command line are in llm/defaults.py).

It talks to Anthropic with the credentials the user's Claude Code already
uses (a subscription login included, which is why ``--bare``, whose auth is
strictly ``ANTHROPIC_API_KEY``, is not used). The child must not become a
Claude Code session of its own, so the command line carries:

* ``--safe-mode``: no hooks, plugins, skills, MCP servers or CLAUDE.md of
  the user's; with ``MEMLANE_NO_HOOKS=1`` in its environment (llm/command.py)
  memlane's hooks stay silent even if they were loaded, so distilling an
  exchange never captures another one;
* ``--strict-mcp-config``: no MCP server at all (none is given);
* ``--no-session-persistence``: no transcript in ``~/.claude/projects/``,
  so the child's turn never shows up in the user's history or memlane's
  sessions layer;
* ``--tools ""``: no tools, and ``--system-prompt`` with memlane's own
  instructions instead of Claude Code's, so a call costs the exchange and
  little else;
* ``--output-format json``: the answer and the ``usage`` the daily budget
  counts.

It runs in a directory of memlane's own (``$MEMLANE_HOME/claude-code-llm``),
never the user's project, so nothing of the project is read or recorded.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import LlmError
from memlane.core.paths import memlane_home
from memlane.llm._http import token_count
from memlane.llm._text import one_line
from memlane.llm.base import DEFAULT_MAX_TOKENS, CompletesWithUsage, Usage
from memlane.llm.command import CommandLLM, exit_reason
from memlane.llm.defaults import CLAUDE_CODE_MODEL as DEFAULT_MODEL

if TYPE_CHECKING:
    from memlane.llm.factory import HostCall, LlmChoice

#: What keeps the child from being a Claude Code session of its own (see above).
CHILD_FLAGS = (
    "--output-format",
    "json",
    "--safe-mode",
    "--strict-mcp-config",
    "--no-session-persistence",
    "--tools",
    "",
)
WORKDIR = "claude-code-llm"


class ClaudeCodeLLM(CompletesWithUsage, CommandLLM):
    failure_hint = (
        "check that `claude -p` works in a terminal (logged in), or configure [llm] "
        "(`memlane config list`)"
    )

    @property
    def name(self) -> str:
        return f"claude-code/{self.model or DEFAULT_MODEL}"

    def complete_with_usage(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> tuple[str, Usage | None]:
        budget = self.timeout_s if timeout_s is None else timeout_s
        argv = [*self.argv, *CHILD_FLAGS]
        if system:
            # One argument: a text starting with "-" must not read as an option.
            argv.append(f"--system-prompt={system}")
        returncode, out, err = self.spawn(argv, prompt, budget, cwd=_workdir())
        result = _result_of(out)
        if result is None:
            if returncode != 0:
                raise LlmError(exit_reason(self.argv[0], returncode, err), self.failure_hint)
            raise LlmError("malformed answer: claude -p printed no JSON result", self.failure_hint)
        text = result.get("result")
        if result.get("is_error") or returncode != 0:
            detail = one_line(text) if isinstance(text, str) and text.strip() else "no detail"
            raise LlmError(f"claude -p failed: {detail}", self.failure_hint)
        if not isinstance(text, str) or not text.strip():
            raise LlmError("empty answer", "claude -p returned no text")
        return text.strip(), _usage_of(result.get("usage"))


def _result_of(out: bytes) -> dict[str, Any] | None:
    """The ``{"type": "result", ...}`` object ``--output-format json`` prints last."""
    text = out.decode("utf-8", errors="replace").strip()
    for line in [text, *reversed(text.splitlines())]:
        try:
            body = json.loads(line)
        except ValueError:
            continue
        if isinstance(body, dict) and body.get("type") == "result":
            return body
    return None


def _usage_of(usage: Any) -> Usage | None:
    if not isinstance(usage, dict) or not isinstance(usage.get("output_tokens"), int):
        return None
    read = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(
        sum(token_count(usage.get(name)) for name in read), token_count(usage["output_tokens"])
    )


def _workdir() -> Path:
    """A directory of memlane's own to run the child in (the system's temp as a fallback)."""
    path = memlane_home() / WORKDIR
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.gettempdir())
    return path


def from_choice(choice: LlmChoice, host_call: HostCall | None = None) -> ClaudeCodeLLM:
    """The Claude Code default of the LLM factory (llm/factory.py)."""
    assert choice.command is not None
    return ClaudeCodeLLM(choice.command, model=choice.model, timeout_s=choice.timeout_s)
