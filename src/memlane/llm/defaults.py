"""Provider defaults, importable without loading any provider (or httpx)."""

from __future__ import annotations

from urllib.parse import urlsplit

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Only for OpenAI itself: every other compatible server names its own models.
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
OPENAI_KEY_ENV = "OPENAI_API_KEY"

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_DEFAULT_MODEL = "claude-haiku-4-5"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"


def is_openai_url(base_url: str) -> bool:
    return urlsplit(base_url).hostname == "api.openai.com"


def is_anthropic_url(base_url: str) -> bool:
    return urlsplit(base_url).hostname == "api.anthropic.com"
