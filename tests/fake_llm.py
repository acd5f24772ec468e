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
``tool_calls``     (OpenAI) ``(ToolCall(name, arguments), ...)``: the answer
                   is a tool-call turn (``finish_reason "tool_calls"``),
                   streamed or not

Scripted replies: ``answers=[...]`` are given one per request, in order,
before ``answer`` takes over; ``responder=f`` (a function of the
``Request``) answers every request it returns a string for (or a
``Behaviour`` for a whole scripted response), e.g. to answer distillation
and extraction prompts differently. ``server.llm()`` is memlane's own
provider (``OpenAILLM`` / ``AnthropicLLM``) pointed at the server, the way
engine tests get an LLM: real HTTP, no in-process stand-in.

``server.requests`` lists every request received (``Request``: path, lower-
case headers, parsed JSON body or None; its ``system`` and ``prompt`` text,
``model``, the ``tools`` it declares, ``texts(role)`` of its messages and
``last_tool_result``), recorded before any delay; ``server.prompts`` is
every ``prompt``. ``closed_port_url()`` gives a URL on which nothing listens.

``FakeModel`` is the model behind the real pi coding agent (tests/e2e): a
``FakeOpenAI`` that answers *agent turns* (requests declaring ``tools``,
pi's own) from the queue ``server.agent(reply, ...)`` (a ``Reply``:
``Reply.say(text)``, ``Reply.call(name, **arguments)``; or a function of the
``Request`` returning one; ``default_text`` when the queue is empty) and
every other request (memlane's distillation through the sidecar's
``llm.complete``) with ``server.distill`` (text or a function of the
``Request`` returning text, or a ``Behaviour``: ``Behaviour(delay_s=3600)``
is a model that never answers). ``agent_requests`` and ``distill_requests`` split
``requests`` between the two.

Embeddings (OpenAI): ``POST /v1/embeddings`` answers deterministic vectors
(``EMBEDDING_DIM`` numbers, words hashed into buckets: texts sharing words
are close), recorded in ``server.embedding_requests`` (never in
``requests``, so scripted answers are not consumed by them). Clearing
``server.embeddings_open`` (a ``threading.Event``) holds every embedding
request until it is set again: a model that is still loading.
``FakeOpenAI(embeddings=False)`` is a chat-only server: an embedding request
is recorded in ``requests`` and answered 404 (an error memlane does not retry).
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, Self

from loopback import LoopbackServer

__all__ = [
    "EMBEDDING_DIM",
    "Behaviour",
    "FakeAnthropic",
    "FakeModel",
    "FakeOpenAI",
    "Reply",
    "Request",
    "ToolCall",
    "closed_port_url",
    "wait_until",
]

# The "created" stamp of every OpenAI answer: a fixed moment, as nothing reads it.
CREATED = 1_764_496_800
EMBEDDING_DIM = 16


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asks for (OpenAI ``tool_calls``)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


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
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Reply:
    """One scripted model turn: text, or tool calls (``Reply.call``)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    @staticmethod
    def say(text: str) -> Reply:
        return Reply(text=text)

    @staticmethod
    def call(name: str, **arguments: Any) -> Reply:
        return Reply(tool_calls=(ToolCall(name, arguments),))


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

    @property
    def model(self) -> str:
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""

    @property
    def tools(self) -> list[Any]:
        """The tools the request declares (an agent's turn), [] when none."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return list(tools) if isinstance(tools, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("function", {}).get("name", "")) for t in self.tools]

    def texts(self, role: str | None = None) -> list[str]:
        """The text of every message (of one role, e.g. ``"tool"``), in order."""
        if not isinstance(self.body, dict):
            return []
        return [
            _text(m.get("content"))
            for m in self.body.get("messages", [])
            if isinstance(m, dict) and (role is None or m.get("role") == role)
        ]

    @property
    def last_tool_result(self) -> str:
        """The text of the last tool result sent back to the model ("" when none)."""
        results = self.texts("tool")
        return results[-1] if results else ""


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
# A scripted agent turn of FakeModel: a reply, or a function of the request.
Script = Reply | Callable[[Request], Reply]


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
    embeddings_endpoint: ClassVar[str | None] = None

    def __init__(
        self,
        *,
        answers: Iterable[str] = (),
        responder: Responder | None = None,
        embeddings: bool = True,
        **behaviour: Any,
    ) -> None:
        self.behaviour = Behaviour(**behaviour)
        if not embeddings:  # a chat-only server: embedding requests get a 404
            self.embeddings_endpoint = None
        self.requests: list[Request] = []
        self.embedding_requests: list[Request] = []
        # Set: embedding requests are answered; cleared: they wait (a model loading).
        self.embeddings_open = threading.Event()
        self.embeddings_open.set()
        self.responder = responder
        self._queue: list[Behaviour] = [replace(self.behaviour, answer=a) for a in answers]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: LoopbackServer | None = None

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
        assert self._server is not None, "use the server as a context manager"
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.endpoint}"

    def __enter__(self) -> _FakeServer:
        self._server = LoopbackServer(_Handler, server_fake=self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()  # wakes delaying and trickling handlers
        if self._server is not None:
            self._server.close()

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

    def _embeddings(self, request: Request) -> bytes | None:
        """The answer to an embedding request, once ``embeddings_open`` is set
        (None when the server stopped first)."""
        with self._lock:
            self.embedding_requests.append(request)
        while not self.embeddings_open.wait(0.02):
            if self._stopping.is_set():
                return None
        body = request.body if isinstance(request.body, dict) else {}
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        data = [
            {"object": "embedding", "index": i, "embedding": _hashed_vector(text)}
            for i, text in enumerate(texts)
        ]
        return json.dumps({"object": "list", "data": data, "model": request.model}).encode()

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

    def do_GET(self) -> None:
        # An OpenAI client may list the models first.
        if self.path.endswith("/models"):
            listing = {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            self._send(200, json.dumps(listing).encode(), "application/json")
        else:
            self._send(404, b'{"error": {"message": "no such endpoint"}}', "application/json")

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = Request(self.path, headers, body, raw)
        if fake.embeddings_endpoint is not None and self.path == fake.embeddings_endpoint:
            vectors = fake._embeddings(request)
            if vectors is not None:
                self._send(200, vectors, "application/json")
            return
        behaviour = fake._next(request)
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


def _hashed_vector(text: str) -> list[float]:
    """Words hashed into ``EMBEDDING_DIM`` buckets (the client normalises)."""
    vector = [0.0] * EMBEDDING_DIM
    for word in text.lower().split():
        vector[
            int.from_bytes(hashlib.sha256(word.encode()).digest()[:2], "big") % EMBEDDING_DIM
        ] += 1
    if not any(vector):
        vector[0] = 1.0
    return vector


def _sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {text}\n\n"


class FakeOpenAI(_FakeServer):
    """``POST /v1/chat/completions`` (and ``/v1/embeddings``); ``base_url`` ends in ``/v1``."""

    base_path = "/v1"
    endpoint = "/v1/chat/completions"
    embeddings_endpoint = "/v1/embeddings"

    def __enter__(self) -> Self:
        super().__enter__()
        return self

    def llm(self, model: str = "fake-model", *, timeout_s: float = 30.0) -> Any:
        from memlane.llm.openai import OpenAILLM

        return OpenAILLM(model, base_url=self.base_url, timeout_s=timeout_s)

    @staticmethod
    def _tool_calls(behaviour: Behaviour, *, streamed: bool) -> list[dict[str, Any]]:
        calls = []
        for index, call in enumerate(behaviour.tool_calls):
            entry: dict[str, Any] = {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            if streamed:
                entry["index"] = index
            calls.append(entry)
        return calls

    def render_stream(self, behaviour: Behaviour, model: str) -> bytes:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": CREATED,
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
        for call in self._tool_calls(behaviour, streamed=True):
            # The name first, the arguments in a later delta, as OpenAI streams them.
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            out.append(_sse(chunk({"tool_calls": [head]})))
            arguments = {
                "index": call["index"],
                "function": {"arguments": call["function"]["arguments"]},
            }
            out.append(_sse(chunk({"tool_calls": [arguments]})))
        out.append(_sse(chunk({}, "tool_calls" if behaviour.tool_calls else "stop")))
        # The usage chunk OpenAI sends last with stream_options.include_usage.
        out.append(
            _sse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": model,
                    "choices": [],
                    "usage": _USAGE,
                }
            )
        )
        out.append(_sse("[DONE]"))
        return "".join(out).encode()

    def render_json(self, behaviour: Behaviour, model: str) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": behaviour.answer}
        if behaviour.tool_calls:
            message["content"] = behaviour.answer or None
            message["tool_calls"] = self._tool_calls(behaviour, streamed=False)
        return json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": CREATED,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if behaviour.tool_calls else "stop",
                    }
                ],
                "usage": _USAGE,
            }
        ).encode()

    def render_error(self, behaviour: Behaviour) -> bytes:
        message = behaviour.error_message or f"fake error {behaviour.status}"
        return json.dumps({"error": {"message": message, "type": "fake_error"}}).encode()


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

DEFAULT_DISTILLATION = "- the user and the agent worked on the task\n- the agent answered"


class FakeModel(FakeOpenAI):
    """pi's model in the e2e tests: agent turns scripted apart from distillation.

    A request that declares ``tools`` is one of pi's agent turns: it takes
    the next reply queued with ``agent(...)`` (``default_text`` when none is
    queued). Any other request is a completion memlane asked for (the
    sidecar's ``llm.complete``, which pi routes to this model): ``distill``
    answers it, a text or a function of the ``Request``.
    """

    def __init__(
        self,
        *,
        default_text: str = "Done.",
        distill: str | Callable[[Request], str | Behaviour] = DEFAULT_DISTILLATION,
        **behaviour: Any,
    ) -> None:
        super().__init__(responder=self._respond, **behaviour)
        self.default_text = default_text
        self.distill = distill
        self._agent: deque[Script] = deque()

    def agent(self, *replies: Script) -> None:
        """Queue replies for the next agent turns, first in first out."""
        with self._lock:
            self._agent.extend(replies)

    def pending(self) -> int:
        """Agent replies queued and not yet used."""
        with self._lock:
            return len(self._agent)

    @property
    def agent_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.tools]

    @property
    def distill_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if not r.tools]

    def _respond(self, request: Request) -> Behaviour:
        if request.tools:
            with self._lock:
                script: Script = (
                    self._agent.popleft() if self._agent else Reply.say(self.default_text)
                )
            reply = script(request) if callable(script) else script
        else:
            distill = self.distill
            answer = distill(request) if callable(distill) else distill
            if isinstance(answer, Behaviour):
                return answer  # a whole scripted response: an error, a model that hangs
            reply = Reply.say(answer)
        return replace(self.behaviour, answer=reply.text, tool_calls=reply.tool_calls)


class FakeAnthropic(_FakeServer):
    """``POST /v1/messages``; ``base_url`` is the bare origin, as in Anthropic's SDKs."""

    base_path = ""
    endpoint = "/v1/messages"

    def __enter__(self) -> Self:
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
