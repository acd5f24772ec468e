"""A scripted OpenAI-compatible streaming chat server on 127.0.0.1 for the pi e2e tests.

pi talks to it as a custom ``openai-completions`` provider (``models.json``).
Two kinds of request reach it and are answered separately:

* **agent turns** (pi's own requests: they declare ``tools``): answered from
  the ``agent`` queue, first in first out. A reply is plain text
  (``Reply.say("...")``) or tool calls (``Reply.call("memory_search",
  query="redis")``). When the queue is empty the answer is ``default_text``.
  A reply may also be a function of the request body, so a test can answer
  with what a tool returned (``lambda body: Reply.say(last_tool_result(body))``).
* **completions without tools** (memlane's distillation through the
  sidecar's ``llm.complete``): answered by ``distill`` (text or a function
  of the body).

Every request body is recorded in ``requests`` (agent turns also in
``agent_requests``, the others in ``distill_requests``), so tests assert on
the system prompt, hidden messages and tool results pi sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The "created" stamp of every answer: a fixed time, as nothing reads it.
CREATED = 1_764_496_800

__all__ = ["FakeModel", "Reply", "last_tool_result", "message_texts", "system_text"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    @staticmethod
    def say(text: str) -> Reply:
        return Reply(text=text)

    @staticmethod
    def call(name: str, **arguments: Any) -> Reply:
        return Reply(tool_calls=(ToolCall(name, arguments),))


Script = Reply | Callable[[dict[str, Any]], Reply]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def system_text(body: dict[str, Any]) -> str:
    """Every system (or developer) message of a request, joined."""
    return "\n".join(
        _content_text(m.get("content"))
        for m in body.get("messages", [])
        if m.get("role") in ("system", "developer")
    )


def message_texts(body: dict[str, Any], role: str | None = None) -> list[str]:
    """The text of every message (of one role) in a request."""
    return [
        _content_text(m.get("content"))
        for m in body.get("messages", [])
        if role is None or m.get("role") == role
    ]


def last_tool_result(body: dict[str, Any]) -> str:
    """The text of the last tool result in a request ("" when there is none)."""
    results = message_texts(body, "tool")
    return results[-1] if results else ""


@dataclass
class FakeModel:
    default_text: str = "Done."
    distill: str | Callable[[dict[str, Any]], str] = (
        "- the user and the agent worked on the task\n- the agent answered"
    )
    requests: list[dict[str, Any]] = field(default_factory=list)
    agent_requests: list[dict[str, Any]] = field(default_factory=list)
    distill_requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._agent: deque[Script] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._calls = 0

    # -- scripting ---------------------------------------------------------

    def agent(self, *replies: Script) -> None:
        """Queue replies for the next agent turns."""
        with self._lock:
            self._agent.extend(replies)

    def pending(self) -> int:
        with self._lock:
            return len(self._agent)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> FakeModel:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                payload = json.dumps({"object": "list", "data": [{"id": "fake-model"}]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                reply = fake._answer(body)
                fake._stream(self, body, reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering ---------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if body.get("tools"):
                self.agent_requests.append(body)
                script: Script = (
                    self._agent.popleft() if self._agent else Reply.say(self.default_text)
                )
            else:
                self.distill_requests.append(body)
                distill = self.distill
                script = Reply.say(distill(body) if callable(distill) else distill)
        return script(body) if callable(script) else script

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply) -> None:
        model = body.get("model", "fake-model")
        with self._lock:
            self._calls += 1
            call_id = self._calls

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-{call_id}",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        if reply.text:
            # Two pieces, so pi really reassembles a stream.
            half = len(reply.text) // 2 or len(reply.text)
            for piece in (reply.text[:half], reply.text[half:]):
                if piece:
                    events.append(chunk({"content": piece}))
        for index, call in enumerate(reply.tool_calls):
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": f"call_{call_id}_{index}",
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": json.dumps(call.arguments)}}
                        ]
                    }
                )
            )
        events.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        usage = {
            "id": f"chatcmpl-{call_id}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        events.append(usage)

        payload = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
        payload += b"data: [DONE]\n\n"
        if not body.get("stream"):
            # Non-streaming fallback: one JSON completion.
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{call_id}_{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for i, c in enumerate(reply.tool_calls)
                ]
            payload = json.dumps(
                {
                    "id": f"chatcmpl-{call_id}",
                    "object": "chat.completion",
                    "created": CREATED,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                        }
                    ],
                    "usage": usage["usage"],
                }
            ).encode()
            content_type = "application/json"
        else:
            content_type = "text/event-stream"
        handler.send_response(200)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
