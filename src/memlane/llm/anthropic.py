"""The Anthropic Messages API (``POST {base_url}/v1/messages``).

``base_url`` is given without the version segment, as in Anthropic's SDKs
(``https://api.anthropic.com``); one ending in ``/v1`` is accepted as is,
since that is how OpenAI-style base URLs are written and the mistake is easy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memlane.core.errors import ConfigError
from memlane.llm._http import (
    AnswerReader,
    HttpLLM,
    Malformed,
    ServerSaid,
    checked_base_url,
    token_count,
)
from memlane.llm._text import one_line
from memlane.llm.base import Usage
from memlane.llm.defaults import ANTHROPIC_BASE_URL, ANTHROPIC_DEFAULT_MODEL

if TYPE_CHECKING:
    import httpx

    from memlane.llm.factory import HostCall, LlmChoice

ANTHROPIC_VERSION = "2023-06-01"
API_KEY_HINT = 'set llm.api_key = "env:ANTHROPIC_API_KEY" and export ANTHROPIC_API_KEY'


class AnthropicLLM(HttpLLM):
    provider = "anthropic"

    def __init__(
        self,
        model: str = ANTHROPIC_DEFAULT_MODEL,
        *,
        api_key: str | None,
        base_url: str = ANTHROPIC_BASE_URL,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not api_key:
            raise ConfigError("provider anthropic needs an API key", API_KEY_HINT)
        self.base_url = checked_base_url(base_url)
        root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        super().__init__(
            url=f"{root}/messages",
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            transport=transport,
        )

    def _headers(self) -> dict[str, str]:
        assert self._api_key is not None
        return {
            "x-api-key": self._api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "Accept": "text/event-stream, application/json",
        }

    def _payload(self, system: str, prompt: str, max_tokens: int) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
            "stream": True,
        }
        if system:  # the API rejects an empty system text block
            payload["system"] = system
        return payload

    def _reader(self) -> AnswerReader:
        return _MessagesReader()

    def _status_hint(self, status: int) -> str:
        if status in (401, 403):
            return f"check llm.api_key is valid: {API_KEY_HINT}"
        if status == 404:
            return f"check llm.model ({self.model}) and llm.base_url ({self.base_url})"
        if status == 429:
            return "rate limited; try again later"
        if status == 529 or status >= 500:
            return "Anthropic is overloaded or failing; try again later"
        return f"check llm.model ({self.model})"


class _MessagesReader:
    """``content_block_delta`` text deltas, or one ``message`` body; the
    ``usage`` of ``message_start`` (input) and ``message_delta`` (output so far)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._input: int | None = None
        self._output: int | None = None

    def feed(self, event: str | None, data: str) -> bool:
        try:
            body = json.loads(data)
        except ValueError:
            raise Malformed(f"bad stream data {one_line(data, 80)!r}") from None
        if not isinstance(body, dict):
            raise Malformed("stream data is not an object")
        kind = body.get("type") or event
        if kind == "error":
            raise ServerSaid(_error_text(body))
        if kind == "message_start" and isinstance(body.get("message"), dict):
            self._note_usage(body["message"].get("usage"))
        elif kind == "message_delta":
            self._note_usage(body.get("usage"))
        if kind == "content_block_delta":
            delta = body.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                text = delta.get("text")
                if isinstance(text, str):
                    self._parts.append(text)
        return kind == "message_stop"

    def streamed_text(self) -> str:
        return "".join(self._parts)

    def from_json(self, body: Any) -> str:
        if not isinstance(body, dict):
            raise Malformed("the body is not an object")
        if body.get("type") == "error":
            raise ServerSaid(_error_text(body))
        content = body.get("content")
        if not isinstance(content, list):
            raise Malformed("no content")
        self._note_usage(body.get("usage"))
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )

    def _note_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        read = [
            usage.get(name)
            for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(isinstance(value, int) for value in read):
            self._input = sum(token_count(value) for value in read)
        if isinstance(usage.get("output_tokens"), int):
            self._output = token_count(usage["output_tokens"])  # cumulative in a stream

    def usage(self) -> Usage | None:
        if self._input is None and self._output is None:
            return None
        return Usage(self._input or 0, self._output or 0)


def _error_text(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        return one_line(f"{kind}: {message}" if kind and message else str(message or kind))
    return one_line(str(error or "unknown error"))


def from_choice(choice: LlmChoice, host_call: HostCall | None = None) -> AnthropicLLM:
    """Provider ``anthropic`` of the LLM registry (llm/factory.py)."""
    assert choice.model is not None and choice.base_url is not None
    return AnthropicLLM(
        choice.model, base_url=choice.base_url, api_key=choice.api_key, timeout_s=choice.timeout_s
    )
