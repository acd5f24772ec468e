"""A scripted Anthropic Messages API on 127.0.0.1: the model behind the real Claude Code.

``FakeClaude`` answers ``POST /v1/messages`` (Claude Code adds ``?beta=true``)
streamed (server-sent events ``message_start``, ``content_block_start`` /
``content_block_delta`` / ``content_block_stop``, ``message_delta``,
``message_stop``) or as one JSON body, whichever the request asks for, and
``POST /v1/messages/count_tokens``. It is a context manager running on a free
port of 127.0.0.1 (``tests/loopback.py``)::

    with FakeClaude() as model:
        model.agent(Turn.call("mcp__memlane__memory_search", query="redis"), Turn.say("Redis."))
        ... run ``claude -p`` with ANTHROPIC_BASE_URL=model.base_url ...
        assert "TTL" in model.agent_requests[-1].last_tool_result

Requests are told apart the way Claude Code sends them:

* an *agent turn* declares tools and asks for a model other than a haiku
  (the main loop, a forked skill's subagent): it takes the next ``Turn``
  queued with ``agent(...)`` (a ``Turn`` or a function of the ``Request``
  returning one), ``default_text`` when the queue is empty;
* a *compaction* (Claude Code asks for a summary of the conversation,
  ``/compact`` or automatic) is answered by ``compact_summary``;
* a *side request* (a haiku model, or no tools: session titles, memlane's
  distillation, its own ``claude -p --model haiku``) is answered by
  ``side``, a text or a function of the ``Request``.

A turn can report a large ``input_tokens`` (``Turn(..., input_tokens=N)``):
near the model's context window, Claude Code compacts before its next request.

Every request is recorded (``requests``; ``agent_requests``,
``side_requests``, ``compact_requests``; token counts in ``count_requests``) with what reached
the model: ``system`` (the ``system`` parameter and the system-role messages
Claude Code sends hook ``additionalContext`` in), ``prompt``, the tools it
declares, ``tool_results`` and ``last_tool_result``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, Self

from loopback import LoopbackServer

__all__ = ["FakeClaude", "Request", "ToolResult", "ToolUse", "Turn"]

MESSAGES = "/v1/messages"
#: How Claude Code's request for a conversation summary (compaction) begins.
COMPACT_MARKER = "Respond with TEXT ONLY"
COUNT_TOKENS = "/v1/messages/count_tokens"


@dataclass(frozen=True)
class ToolUse:
    """One ``tool_use`` block the model sends."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """One scripted model turn: text, then tool calls (``stop_reason`` ``tool_use``)."""

    text: str = ""
    tool_uses: tuple[ToolUse, ...] = ()
    #: The prompt size the answer reports (``usage.input_tokens``): near the
    #: model's context window, it makes Claude Code compact before its next request.
    input_tokens: int = 10

    @staticmethod
    def say(text: str) -> Turn:
        return Turn(text=text)

    @staticmethod
    def call(name: str, /, **arguments: Any) -> Turn:
        """A tool call alone (``Turn(text, (ToolUse(...), ...))`` for text and several calls)."""
        return Turn(tool_uses=(ToolUse(name, arguments),))


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block Claude Code sent back, with the name of the tool that made it."""

    tool_use_id: str
    name: str
    text: str
    is_error: bool


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    kind: str = ""  # "agent", "side", "compact" or "count"

    @property
    def _body(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def model(self) -> str:
        return str(self._body.get("model", ""))

    @property
    def stream(self) -> bool:
        return bool(self._body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self._body.get("messages", []) if isinstance(m, dict)]

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name", "")) for t in self._body.get("tools", []) if isinstance(t, dict)]

    @property
    def system(self) -> str:
        """The system parameter and every system-role message (where hook context lands)."""
        parts = [_text(self._body.get("system"))]
        parts += [_text(m.get("content")) for m in self.messages if m.get("role") == "system"]
        return "\n".join(p for p in parts if p)

    def texts(self, role: str) -> list[str]:
        """The text blocks of every message of *role*, in order."""
        return [_text(m.get("content")) for m in self.messages if m.get("role") == role]

    @property
    def everything(self) -> str:
        """All the text the model was sent (system, messages, tool results), for searches."""
        return json.dumps(self._body, ensure_ascii=False)

    @property
    def prompt(self) -> str:
        """The text of the last user message that is a prompt (not only tool results)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [
                str(b.get("text", ""))
                for b in content or []
                if isinstance(b, dict)
                and b.get("type") == "text"
                and not str(b.get("text", "")).startswith("<system-reminder>")
            ]
            if texts:
                return "\n".join(texts)
        return ""

    @property
    def tool_results(self) -> list[ToolResult]:
        names: dict[str, str] = {}
        found: list[ToolResult] = []
        for message in self.messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    names[str(block.get("id"))] = str(block.get("name"))
                elif block.get("type") == "tool_result":
                    use_id = str(block.get("tool_use_id"))
                    found.append(
                        ToolResult(
                            use_id,
                            names.get(use_id, ""),
                            _text(block.get("content")),
                            bool(block.get("is_error")),
                        )
                    )
        return found

    @property
    def last_tool_result(self) -> str:
        results = self.tool_results
        return results[-1].text if results else ""


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


Script = Turn | Callable[[Request], Turn]
SideAnswer = str | Callable[[Request], str]


class FakeClaude:
    """The scripted Messages API (see the module docstring)."""

    def __init__(
        self,
        *,
        default_text: str = "Done.",
        side: SideAnswer = "Memory work",
        compact_summary: str = "The user and the assistant worked on the project.",
    ) -> None:
        self.default_text = default_text
        self.side = side
        self.compact_summary = compact_summary
        self.requests: list[Request] = []
        self._agent: deque[Script] = deque()
        self._lock = threading.Lock()
        self._ids = 0
        self._server: LoopbackServer | None = None

    # ---- scripting -------------------------------------------------------

    def agent(self, *turns: Script) -> None:
        """Queue turns for the next agent requests, first in first out."""
        with self._lock:
            self._agent.extend(turns)

    def pending(self) -> int:
        with self._lock:
            return len(self._agent)

    def clear(self) -> None:
        """Forget the recorded requests and the queued turns (between scenarios)."""
        with self._lock:
            self.requests.clear()
            self._agent.clear()

    # ---- what was received --------------------------------------------------

    def _of(self, kind: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    @property
    def agent_requests(self) -> list[Request]:
        return self._of("agent")

    @property
    def side_requests(self) -> list[Request]:
        return self._of("side")

    @property
    def count_requests(self) -> list[Request]:
        return self._of("count")

    @property
    def compact_requests(self) -> list[Request]:
        return self._of("compact")

    # ---- server ---------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "use the server as a context manager"
        return self._server.port

    @property
    def base_url(self) -> str:
        """ANTHROPIC_BASE_URL: the bare origin (the SDK adds ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._server = LoopbackServer(_Handler, fake=self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()

    # ---- for the handler ------------------------------------------------

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, str, bytes]:
        route = path.split("?", 1)[0]
        if route == COUNT_TOKENS:
            request = Request(path, headers, body, "count")
            with self._lock:
                self.requests.append(request)
            tokens = max(1, len(json.dumps(body)) // 4)
            return 200, "application/json", json.dumps({"input_tokens": tokens}).encode()
        if route != MESSAGES or not isinstance(body, dict):
            error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
            return 404, "application/json", json.dumps(error).encode()
        request = Request(path, headers, body)
        compact = COMPACT_MARKER in request.prompt
        agent = bool(body.get("tools")) and "haiku" not in request.model and not compact
        request.kind = "compact" if compact else "agent" if agent else "side"
        with self._lock:
            self.requests.append(request)
            self._ids += 1
            number = self._ids
            script: Script | None = (
                (self._agent.popleft() if self._agent else None) if agent else None
            )
        if agent:
            chosen = script if script is not None else Turn.say(self.default_text)
            turn = chosen(request) if callable(chosen) else chosen
        elif compact:
            turn = Turn.say(self.compact_summary)
        else:
            side = self.side
            turn = Turn.say(side(request) if callable(side) else side)
        message_id = f"msg_fake_{number:04d}"
        if request.stream:
            return 200, "text/event-stream", _stream(turn, request.model, message_id)
        return 200, "application/json", _json(turn, request.model, message_id)


def _blocks(turn: Turn, message_id: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for index, use in enumerate(turn.tool_uses):
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{message_id[-4:]}_{index}",
                "name": use.name,
                "input": use.input,
            }
        )
    return blocks


def _usage(output_tokens: int, input_tokens: int = 10) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _json(turn: Turn, model: str, message_id: str) -> bytes:
    return json.dumps(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": _blocks(turn, message_id),
            "stop_reason": "tool_use" if turn.tool_uses else "end_turn",
            "stop_sequence": None,
            "usage": _usage(5, turn.input_tokens),
        }
    ).encode()


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def _stream(turn: Turn, model: str, message_id: str) -> bytes:
    head = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(1, turn.input_tokens),
    }
    out = [_event("message_start", {"message": head})]
    for index, block in enumerate(_blocks(turn, message_id)):
        if block["type"] == "text":
            out.append(
                _event(
                    "content_block_start", {"index": index, "content_block": {**block, "text": ""}}
                )
            )
            text = block["text"]
            size = max(1, len(text) // 3)
            for start in range(0, len(text), size):
                delta = {"type": "text_delta", "text": text[start : start + size]}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        else:
            out.append(
                _event(
                    "content_block_start", {"index": index, "content_block": {**block, "input": {}}}
                )
            )
            arguments = json.dumps(block["input"])
            middle = len(arguments) // 2  # the arguments in two pieces, as the API streams them
            for piece in (arguments[:middle], arguments[middle:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        out.append(_event("content_block_stop", {"index": index}))
    stop = "tool_use" if turn.tool_uses else "end_turn"
    out.append(
        _event(
            "message_delta",
            {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
        )
    )
    out.append(_event("message_stop", {}))
    return "".join(out).encode()


class _Handler(BaseHTTPRequestHandler):
    fake: ClassVar[FakeClaude]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self._send(
            404, "application/json", b'{"type": "error", "error": {"type": "not_found_error"}}'
        )

    def do_HEAD(self) -> None:  # a connectivity probe
        self._send(200, "text/plain", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        headers = {key.lower(): value for key, value in self.headers.items()}
        self._send(*self.fake.answer(self.path, headers, body))

    def _send(self, status: int, ctype: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # Claude Code gave up on a request: nothing to answer
