"""Chat completions from any OpenAI-compatible endpoint: OpenAI, Ollama
(``http://127.0.0.1:11434/v1``), vLLM, llama.cpp, OpenRouter, DeepSeek...

The URL is ``{base_url}/chat/completions`` exactly as the OpenAI clients
build it, so ``base_url`` carries its version segment (``.../v1``).
"""

from __future__ import annotations

import json
import re
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
from memlane.llm.defaults import OPENAI_BASE_URL, is_openai_url

if TYPE_CHECKING:
    import httpx

    from memlane.llm.factory import HostCall, LlmChoice

# Reasoning models served through Ollama or vLLM (DeepSeek-R1, Qwen3) put
# their chain of thought in the content; it must not become a memory.
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


class OpenAILLM(HttpLLM):
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = checked_base_url(base_url)
        if not api_key and is_openai_url(self.base_url):
            raise ConfigError(
                "provider openai needs an API key for api.openai.com",
                'set llm.api_key = "env:OPENAI_API_KEY" and export OPENAI_API_KEY, '
                "or set llm.base_url to a local server such as http://127.0.0.1:11434/v1",
            )
        # OpenAI deprecated max_tokens and its reasoning models reject it;
        # compatible servers (Ollama, vLLM, llama.cpp) only know max_tokens.
        self._max_tokens_field = (
            "max_completion_tokens" if is_openai_url(self.base_url) else "max_tokens"
        )
        super().__init__(
            url=f"{self.base_url}/chat/completions",
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            transport=transport,
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _payload(self, system: str, prompt: str, max_tokens: int) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            self._max_tokens_field: max_tokens,
            "stream": True,
        }
        if is_openai_url(self.base_url):
            # OpenAI streams the usage only when asked (the daily budget counts
            # it); other servers may reject the field, and most send usage anyway.
            payload["stream_options"] = {"include_usage": True}
        return payload

    def _reader(self) -> AnswerReader:
        return _ChatReader()

    def _clean(self, text: str) -> str:
        return _THINK.sub("", text, count=1).strip()

    def _status_hint(self, status: int) -> str:
        if status in (401, 403):
            return 'check llm.api_key (e.g. llm.api_key = "env:OPENAI_API_KEY") is set and valid'
        if status == 404:
            return (
                f"check llm.base_url ({self.base_url}): memlane POSTs to base_url + "
                "'/chat/completions', so it usually ends in /v1; also check llm.model "
                f"({self.model}) exists on the server"
            )
        if status == 429:
            return "the server is rate limiting or out of quota; try again later"
        if status >= 500:
            return "the server failed; check its status or logs"
        return f"check llm.model ({self.model}) and llm.base_url ({self.base_url})"


class _ChatReader:
    """``chat.completion.chunk`` deltas, or one ``chat.completion`` body, and
    the ``usage`` either carries."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage: Usage | None = None

    def feed(self, event: str | None, data: str) -> bool:
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except ValueError:
            raise Malformed(f"bad stream data {one_line(data, 80)!r}") from None
        if not isinstance(chunk, dict):
            raise Malformed("stream data is not an object")
        _raise_error(chunk)
        self._note_usage(chunk.get("usage"))
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise Malformed("no choices")
        if not choices:  # the usage chunk some servers send last
            return False
        delta = choices[0].get("delta") if isinstance(choices[0], dict) else None
        if isinstance(delta, dict):
            self._parts.append(_content_text(delta.get("content")))
        return False

    def streamed_text(self) -> str:
        return "".join(self._parts)

    def from_json(self, body: Any) -> str:
        if not isinstance(body, dict):
            raise Malformed("the body is not an object")
        _raise_error(body)
        self._note_usage(body.get("usage"))
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise Malformed("no choices")
        first = choices[0]
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise Malformed("no message in choices[0]")
        return _content_text(message.get("content"))

    def _note_usage(self, usage: Any) -> None:
        if isinstance(usage, dict) and (
            isinstance(usage.get("prompt_tokens"), int)
            or isinstance(usage.get("completion_tokens"), int)
        ):
            self._usage = Usage(
                token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
            )

    def usage(self) -> Usage | None:
        return self._usage


def _raise_error(body: dict[str, Any]) -> None:
    error = body.get("error")
    if not error:
        return
    if isinstance(error, dict):
        raise ServerSaid(one_line(str(error.get("message") or error.get("type") or error)))
    raise ServerSaid(one_line(str(error)))


def _content_text(content: Any) -> str:
    """Content as text: a string, or (some servers) a list of ``{type: text}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def from_choice(choice: LlmChoice, host_call: HostCall | None = None) -> OpenAILLM:
    """Provider ``openai`` of the LLM registry (llm/factory.py)."""
    assert choice.model is not None and choice.base_url is not None
    return OpenAILLM(
        choice.model, base_url=choice.base_url, api_key=choice.api_key, timeout_s=choice.timeout_s
    )
