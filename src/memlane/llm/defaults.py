"""Provider defaults, importable without loading any provider (or httpx)."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from urllib.parse import urlsplit

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Only for OpenAI itself: every other compatible server names its own models.
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
OPENAI_KEY_ENV = "OPENAI_API_KEY"

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_DEFAULT_MODEL = "claude-haiku-4-5"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"

#: The host whose ``auto`` is the user's own ``claude -p`` (llm/claude_code.py).
CLAUDE_CODE_HOST = "claude-code"
CLAUDE_PROGRAM = "claude"
CLAUDE_CODE_MODEL = "haiku"
CLAUDE_NOT_FOUND_HINT = (
    "`claude` is not on PATH, so entries are verbatim digests; to distil them, put Claude "
    "Code's `claude` on PATH (memlane then runs `claude -p --model haiku`, with no hooks, "
    'plugins or transcript of its own), or set llm.provider = "anthropic" with '
    'llm.api_key = "env:ANTHROPIC_API_KEY"'
)


def is_openai_url(base_url: str) -> bool:
    return urlsplit(base_url).hostname == "api.openai.com"


def is_anthropic_url(base_url: str) -> bool:
    return urlsplit(base_url).hostname == "api.anthropic.com"


def find_claude(env: Mapping[str, str]) -> str | None:
    """The ``claude`` program on *env*'s PATH, absolute; None when there is none."""
    return shutil.which(CLAUDE_PROGRAM, path=env.get("PATH"))


def claude_command(program: str, model: str = CLAUDE_CODE_MODEL) -> str:
    """The Claude Code default's command line (llm/claude_code.py adds its flags)."""
    return shlex.join([program, "-p", "--model", model])
