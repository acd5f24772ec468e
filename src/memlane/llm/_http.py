"""What the HTTP providers (openai, anthropic) share: one streamed POST under
a total deadline, and the mapping of every failure to a one-line ``LlmError``.

A provider supplies the URL, headers and body, and an ``AnswerReader`` that
understands its wire format. The exchange asks for a stream but accepts a
plain JSON answer, because many compatible servers ignore ``stream``.

httpx is imported lazily so that importing ``memlane.llm`` stays cheap.
"""

from __future__ import annotations

import json
import threading
from abc import abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from memlane.core.errors import ConfigError, LlmError
from memlane.llm._deadline import Cancelled, call_with_deadline, timed_out
from memlane.llm._text import display_url, exception_reason, one_line, scrub
from memlane.llm.base import DEFAULT_MAX_TOKENS, CompletesWithUsage, Usage
from memlane.llm.sse import SseDecoder, looks_like_sse

if TYPE_CHECKING:
    import httpx

#: A larger answer body is not a chat completion (max_tokens bounds real ones).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: How much of an error body is read: enough for the server's explanation.
ERROR_BODY_BYTES = 8 * 1024


class Malformed(Exception):
    """The body does not follow the provider's wire format."""


class ServerSaid(Exception):
    """The server answered 200 but reported an error inside the body or stream."""


class AnswerReader(Protocol):
    """Turns one response into the answer text, in the provider's wire format."""

    def feed(self, event: str | None, data: str) -> bool:
        """Take one SSE event; True once the stream says it is complete."""
        ...

    def streamed_text(self) -> str: ...

    def from_json(self, body: Any) -> str:
        """The answer from a non-streamed JSON body."""
        ...

    def usage(self) -> Usage | None:
        """The tokens the response reported, once it is read; None if it did not say."""
        ...


def checked_base_url(base_url: str) -> str:
    """``base_url`` without its trailing slash; ``ConfigError`` unless http(s) with a host."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"llm.base_url must be an http:// or https:// URL, got {display_url(base_url)!r}",
            "e.g. http://127.0.0.1:11434/v1 for Ollama",
        )
    return base_url.strip().rstrip("/")


class HttpLLM(CompletesWithUsage):
    """One pooled ``httpx.Client`` per provider; ``complete`` is thread-safe."""

    provider: str = ""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str | None,
        timeout_s: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url
        self.model = model
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(url={display_url(self.url)!r}, model={self.model!r})"

    # ---- provider specifics --------------------------------------------

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    def _payload(self, system: str, prompt: str, max_tokens: int) -> dict[str, Any]: ...

    @abstractmethod
    def _reader(self) -> AnswerReader: ...

    @abstractmethod
    def _status_hint(self, status: int) -> str: ...

    def _clean(self, text: str) -> str:
        return text.strip()

    # ---- protocol ------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}"

    def complete_with_usage(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> tuple[str, Usage | None]:
        budget = self.timeout_s if timeout_s is None else timeout_s
        payload = self._payload(system, prompt, max_tokens)
        text, usage = call_with_deadline(
            lambda cancel: self._exchange(payload, budget, cancel),
            budget,
            thread_name=f"memlane-llm-{self.provider}",
            hint=f"{display_url(self.url)} did not finish in time; raise llm.timeout_s "
            "or pick a faster model",
        )
        answer = self._clean(text)
        if not answer:
            raise LlmError(
                "empty answer", f"{self.name} at {display_url(self.url)} returned no text"
            )
        return answer, usage

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # ---- the exchange, on the worker thread ----------------------------

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(transport=self._transport)
            return self._client

    def _exchange(
        self, payload: dict[str, Any], timeout_s: float, cancel: threading.Event
    ) -> tuple[str, Usage | None]:
        import httpx

        shown = display_url(self.url)
        try:
            with self._http().stream(
                "POST", self.url, json=payload, headers=self._headers(), timeout=timeout_s
            ) as response:
                if response.status_code != 200:
                    raise self._status_error(response, cancel)
                if "event-stream" in response.headers.get("content-type", ""):
                    return self._read_stream(response, cancel)
                return self._read_whole(response, cancel)
        except (LlmError, Cancelled):
            raise
        except Malformed as exc:
            raise LlmError(
                f"malformed answer: {scrub(str(exc), self._api_key)}",
                f"check that {shown} implements the {self.provider} API",
            ) from None
        except ServerSaid as exc:
            raise LlmError(
                f"error from {shown}: {scrub(str(exc), self._api_key)}",
                f"check llm.model ({self.model}) and the provider's status",
            ) from None
        except httpx.TimeoutException:
            raise timed_out(timeout_s) from None
        except httpx.ConnectError as exc:
            raise LlmError(
                f"cannot connect to {shown} ({exception_reason(exc)})",
                "check llm.base_url and that the server is running",
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise LlmError(
                f"request to {shown} failed ({type(exc).__name__}: {exception_reason(exc)})",
                "check llm.base_url and the network",
            ) from None
        except Exception as exc:  # a failed distillation must never surface as a traceback
            raise LlmError(
                f"request to {shown} failed ({type(exc).__name__}: {exception_reason(exc)})"
            ) from exc

    def _chunks(
        self, response: httpx.Response, cancel: threading.Event, limit: int
    ) -> Iterator[bytes]:
        received = 0
        for chunk in response.iter_bytes():
            if cancel.is_set():
                raise Cancelled
            received += len(chunk)
            if received > limit:
                raise Malformed(f"body larger than {limit // (1024 * 1024) or 1} MB")
            yield chunk

    def _read_stream(
        self, response: httpx.Response, cancel: threading.Event
    ) -> tuple[str, Usage | None]:
        reader = self._reader()
        decoder = SseDecoder()
        for chunk in self._chunks(response, cancel, MAX_BODY_BYTES):
            for event in decoder.feed(chunk):
                if reader.feed(event.event, event.data):
                    return reader.streamed_text(), reader.usage()
        for event in decoder.close():
            if reader.feed(event.event, event.data):
                break
        return reader.streamed_text(), reader.usage()

    def _read_whole(
        self, response: httpx.Response, cancel: threading.Event
    ) -> tuple[str, Usage | None]:
        raw = b"".join(self._chunks(response, cancel, MAX_BODY_BYTES))
        text = raw.decode("utf-8", errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            if looks_like_sse(text):
                reader = self._reader()
                decoder = SseDecoder()
                for event in [*decoder.feed(raw), *decoder.close()]:
                    if reader.feed(event.event, event.data):
                        break
                return reader.streamed_text(), reader.usage()
            raise Malformed(f"the body is not JSON: {one_line(text, 80)!r}") from None
        reader = self._reader()
        return reader.from_json(body), reader.usage()

    def _status_error(self, response: httpx.Response, cancel: threading.Event) -> LlmError:
        status = response.status_code
        raw = b""
        try:
            for chunk in response.iter_bytes():
                if cancel.is_set():
                    break
                raw += chunk
                if len(raw) >= ERROR_BODY_BYTES:
                    break
        except Exception:  # the status alone is still worth reporting
            pass
        detail = scrub(_error_detail(raw[:ERROR_BODY_BYTES]), self._api_key)
        message = f"HTTP {status} from {display_url(self.url)}"
        return LlmError(f"{message}: {detail}" if detail else message, self._status_hint(status))


def _error_detail(raw: bytes) -> str:
    """The server's own explanation from an error body, best effort, one line."""
    text = raw.decode("utf-8", errors="replace")
    message: Any = None
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("type")
        elif error:
            message = error
        else:
            message = body.get("detail") or body.get("message")
    if message is None:
        message = text
    return one_line(str(message))


def token_count(value: Any) -> int:
    """A token count from a usage object: a non-negative int, else 0."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0
