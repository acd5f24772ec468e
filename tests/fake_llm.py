"""Fake LLM servers on 127.0.0.1 for tests: real HTTP, real sockets, no mocks.

``FakeOpenAI`` speaks OpenAI chat completions (``POST /v1/chat/completions``),
``FakeAnthropic`` the Anthropic Messages API (``POST /v1/messages``). Both are
context managers running a ``ThreadingHTTPServer`` on port 0 in a daemon
thread::

    from fake_llm import FakeOpenAI

    with FakeOpenAI(answer="- a\\n- b") as server:
        llm = OpenAILLM("fake-model", base_url=server.base_url)
        assert llm.complete("sys", "hi") == "- a\\n- b"
        assert server.requests[0].body["messages"][1]["content"] == "hi"

Behaviour, given as constructor keywords, changed for every later request
with ``server.set(**changes)``, or for the next request only with
``server.push(**changes)`` (pushed behaviours are used first, in order):

``answer``         the model's text (``""``: an empty answer)
``stream``         True: answer with SSE when the request asks to stream;
                   False: plain JSON always (a server that ignores ``stream``)
``delay_s``        wait before sending the status line
``trickle_s``      pause between pieces of the body (a slow server)
``trickle_bytes``  size of those pieces (default 1 byte)
``status``         HTTP status; not 200: an error body in the API's format
``error_message``  the message inside that error body
``body``           raw body (str or bytes) replacing the generated one: for
                   malformed answers; sent with ``content_type``
``content_type``   overrides the content type of the response
``stream_error``   after the first text delta, an error event with this
                   message instead of the rest of the stream

Scripted replies: ``answers=[...]`` are given one per request, in order,
before ``answer`` takes over; ``responder=f`` (a function of the
``Request``) answers every request it returns a string for (or a
``Behaviour`` for a whole scripted response), e.g. to answer distillation
and extraction prompts differently. ``server.llm()`` is memlane's own
provider (``OpenAILLM`` / ``AnthropicLLM``) pointed at the server, the way
engine tests get an LLM: real HTTP, no in-process stand-in.

``server.requests`` lists every request received (``Request``: path, lower-
case headers, parsed JSON body or None, and its ``system`` and ``prompt``
text), recorded before any delay; ``server.prompts`` is every ``prompt``.
``closed_port_url()`` gives a URL on which nothing listens.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

__all__ = [
    "Behaviour",
    "FakeAnthropic",
    "FakeOpenAI",
    "Request",
    "closed_port_url",
    "wait_until",
]


@dataclass(frozen=True)
class Behaviour:
    answer: str = "- a\n- b"
    stream: bool = True
    delay_s: float = 0.0
    trickle_s: float = 0.0
    trickle_bytes: int = 1
    status: int = 200
    error_message: str | None = None
    body: str | bytes | None = None
    content_type: str | None = None
    stream_error: str | None = None


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False, default=b"")

    @property
    def system(self) -> str:
        """The system prompt (OpenAI: the system messages; Anthropic: ``system``)."""
        if not isinstance(self.body, dict):
            return ""
        if "system" in self.body:
            return _text(self.body["system"])
        return "\n".join(
            _text(m.get("content"))
            for m in self.body.get("messages", [])
            if isinstance(m, dict) and m.get("role") in ("system", "developer")
        )

    @property
    def prompt(self) -> str:
        """The last user message's text."""
        if not isinstance(self.body, dict):
            return ""
        users = [
            _text(m.get("content"))
            for m in self.body.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "user"
        ]
        return users[-1] if users else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


Responder = Callable[[Request], "str | Behaviour | None"]


def closed_port_url(path: str = "/v1") -> str:
    """A base URL on 127.0.0.1 where connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def _pieces(answer: str) -> list[str]:
    """The answer in a few deltas, as a model streams it."""
    if not answer:
        return []
    size = max(1, len(answer) // 3)
    return [answer[i : i + size] for i in range(0, len(answer), size)]


class _FakeServer:
    """Shared machinery; subclasses render bodies in their API's format."""

    base_path: ClassVar[str] = ""
    endpoint: ClassVar[str] = ""

    def __init__(
        self,
        *,
        answers: Iterable[str] = (),
        responder: Responder | None = None,
        **behaviour: Any,
    ) -> None:
        self.behaviour = Behaviour(**behaviour)
        self.requests: list[Request] = []
        self.responder = responder
        self._queue: list[Behaviour] = [replace(self.behaviour, answer=a) for a in answers]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- public API ----------------------------------------------------

    def set(self, **changes: Any) -> None:
        """Change the behaviour for every later request."""
        with self._lock:
            self.behaviour = replace(self.behaviour, **changes)

    def push(self, **changes: Any) -> None:
        """Queue a behaviour (the current one with ``changes``) for one request."""
        with self._lock:
            self._queue.append(replace(self.behaviour, **changes))

    def answer(self, *answers: str) -> None:
        """Queue answers, one per coming request (then ``answer`` again)."""
        for text in answers:
            self.push(answer=text)

    @property
    def prompts(self) -> list[str]:
        """The user prompt of every request so far."""
        with self._lock:
            return [r.prompt for r in self.requests]

    def llm(self, model: str = "fake-model", *, timeout_s: float = 30.0) -> Any:
        """memlane's provider for this API, talking to this server."""
        raise NotImplementedError

    @property
    def port(self) -> int:
        assert self._httpd is not None, "use the server as a context manager"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.endpoint}"

    def __enter__(self) -> _FakeServer:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # a trickling handler must not hold up exit
        self._httpd = httpd
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    # ---- for the handler -----------------------------------------------

    def _next(self, request: Request) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
            current, responder = self.behaviour, self.responder
        if responder is not None:
            reply = responder(request)
            if isinstance(reply, Behaviour):
                return reply
            if reply is not None:
                return replace(current, answer=reply)
        return current

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; False if it stopped."""
        return not self._stopping.wait(seconds)

    def render_stream(self, behaviour: Behaviour, model: str) -> bytes:
        raise NotImplementedError

    def render_json(self, behaviour: Behaviour, model: str) -> bytes:
        raise NotImplementedError

    def render_error(self, behaviour: Behaviour) -> bytes:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    server_fake: ClassVar[_FakeServer]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        headers = {key.lower(): value for key, value in self.headers.items()}
        behaviour = fake._next(Request(self.path, headers, body, raw))
        if behaviour.delay_s and not fake._sleep(behaviour.delay_s):
            return
        if self.path != fake.endpoint:
            self._send(404, b'{"error": {"message": "no such endpoint"}}', "application/json")
            return
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        wants_stream = isinstance(body, dict) and bool(body.get("stream"))
        streaming = behaviour.stream and wants_stream and behaviour.status == 200
        if behaviour.body is not None:
            payload = behaviour.body
            data = payload.encode() if isinstance(payload, str) else payload
            ctype = behaviour.content_type or "application/json"
        elif behaviour.status != 200:
            data, ctype = fake.render_error(behaviour), "application/json"
        elif streaming:
            data, ctype = fake.render_stream(behaviour, model), "text/event-stream"
        else:
            data, ctype = fake.render_json(behaviour, model), "application/json"
        self._send(behaviour.status, data, behaviour.content_type or ctype, behaviour)

    def _send(
        self, status: int, data: bytes, ctype: str, behaviour: Behaviour | None = None
    ) -> None:
        fake = self.server_fake
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Connection", "close")
            chunked = "event-stream" in ctype
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            size = behaviour.trickle_bytes if behaviour and behaviour.trickle_s else len(data)
            for start in range(0, len(data), max(1, size)):
                piece = data[start : start + size]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                self.wfile.flush()
                if behaviour and behaviour.trickle_s and not fake._sleep(behaviour.trickle_s):
                    return
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (deadline): expected in tests


def _sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {text}\n\n"


class FakeOpenAI(_FakeServer):
    """``POST /v1/chat/completions``; ``base_url`` ends in ``/v1``."""

    base_path = "/v1"
    endpoint = "/v1/chat/completions"

    def __enter__(self) -> FakeOpenAI:
        super().__enter__()
        return self

    def llm(self, model: str = "fake-model", *, timeout_s: float = 30.0) -> Any:
        from memlane.llm.openai import OpenAILLM

        return OpenAILLM(model, base_url=self.base_url, timeout_s=timeout_s)

    def render_stream(self, behaviour: Behaviour, model: str) -> bytes:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        out = [_sse(chunk({"role": "assistant", "content": ""}))]
        for number, piece in enumerate(_pieces(behaviour.answer)):
            out.append(_sse(chunk({"content": piece})))
            if behaviour.stream_error and number == 0:
                error = {"message": behaviour.stream_error, "type": "server_error"}
                out.append(_sse({"error": error}))
                return "".join(out).encode()
        out.append(_sse(chunk({}, "stop")))
        # The usage chunk OpenAI sends last with stream_options.include_usage.
        out.append(_sse({"id": "chatcmpl-fake", "choices": [], "usage": {"total_tokens": 3}}))
        out.append(_sse("[DONE]"))
        return "".join(out).encode()

    def render_json(self, behaviour: Behaviour, model: str) -> bytes:
        return json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": behaviour.answer},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()

    def render_error(self, behaviour: Behaviour) -> bytes:
        message = behaviour.error_message or f"fake error {behaviour.status}"
        return json.dumps({"error": {"message": message, "type": "fake_error"}}).encode()


class FakeAnthropic(_FakeServer):
    """``POST /v1/messages``; ``base_url`` is the bare origin, as in Anthropic's SDKs."""

    base_path = ""
    endpoint = "/v1/messages"

    def __enter__(self) -> FakeAnthropic:
        super().__enter__()
        return self

    def llm(self, model: str = "claude-fake", *, timeout_s: float = 30.0) -> Any:
        from memlane.llm.anthropic import AnthropicLLM

        return AnthropicLLM(
            model, api_key="sk-ant-fake", base_url=self.base_url, timeout_s=timeout_s
        )

    def render_stream(self, behaviour: Behaviour, model: str) -> bytes:
        message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model}
        out = [
            _sse({"type": "message_start", "message": {**message, "content": []}}, "message_start"),
            _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
        ]
        for number, piece in enumerate(_pieces(behaviour.answer)):
            delta = {"type": "text_delta", "text": piece}
            out.append(
                _sse(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    "content_block_delta",
                )
            )
            if behaviour.stream_error and number == 0:
                error = {"type": "overloaded_error", "message": behaviour.stream_error}
                out.append(_sse({"type": "error", "error": error}, "error"))
                return "".join(out).encode()
        out += [
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
        return "".join(out).encode()

    def render_json(self, behaviour: Behaviour, model: str) -> bytes:
        content = [{"type": "text", "text": behaviour.answer}] if behaviour.answer else []
        return json.dumps(
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": "end_turn",
            }
        ).encode()

    def render_error(self, behaviour: Behaviour) -> bytes:
        kinds = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}
        kind = kinds.get(behaviour.status, "api_error")
        message = behaviour.error_message or f"fake error {behaviour.status}"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def wait_until(predicate: Any, timeout_s: float = 2.0) -> bool:
    """Poll ``predicate`` until true or ``timeout_s``; for checks on other threads."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
