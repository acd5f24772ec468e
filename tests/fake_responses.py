"""A fake OpenAI Responses API on 127.0.0.1: the model behind the real Codex CLI (tests/e2e).

``FakeResponses`` runs a ``ThreadingHTTPServer`` on port 0 answering
``POST /v1/responses`` with a streamed (SSE) response, the way Codex reads
it: ``response.created``, one ``response.output_item.done`` per output item
(an assistant message, or a function call), ``response.completed``.
Scripted turns come from the queue ``server.agent(reply, ...)`` (fake_llm's
``Reply``: ``Reply.say(text)``, ``Reply.call(name, **arguments)``; or a
function of the ``ResponsesRequest``), ``default_text`` when it is empty.
Requests that are not agent turns (Codex's own title or memory requests,
which declare no tools) get ``default_text`` too.

``server.requests`` lists every request (path, lower-case headers, parsed
body); a ``ResponsesRequest`` gives its ``instructions``, the ``texts`` of
its input messages, ``tool_names`` and the ``last_tool_result``.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

from fake_llm import Reply

Script = Reply | Callable[["ResponsesRequest"], Reply]


@dataclass
class ResponsesRequest:
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def instructions(self) -> str:
        return str(self.body.get("instructions", "")) if isinstance(self.body, dict) else ""

    @property
    def items(self) -> list[dict[str, Any]]:
        found = self.body.get("input") if isinstance(self.body, dict) else None
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

    def texts(self, role: str | None = None) -> list[str]:
        """The text of every input message (of one role: user, developer, assistant)."""
        out = []
        for item in self.items:
            if item.get("type", "message") != "message":
                continue
            if role is not None and item.get("role") != role:
                continue
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.append(
                    "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                )
        return out

    @property
    def all_text(self) -> str:
        return self.instructions + "\n" + "\n".join(self.texts())

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names = []
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, dict):
                names.append(str(tool.get("name", "")))
                for inner in tool.get("tools", []) if isinstance(tool.get("tools"), list) else []:
                    if isinstance(inner, dict):
                        names.append(f"{tool.get('name', '')}{inner.get('name', '')}")
        return names

    @property
    def last_tool_result(self) -> str:
        outputs = [i for i in self.items if i.get("type") == "function_call_output"]
        if not outputs:
            return ""
        output = outputs[-1].get("output")
        if isinstance(output, list):
            return "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
        return str(output)


class FakeResponses:
    def __init__(self, *, default_text: str = "ok") -> None:
        self.default_text = default_text
        self.requests: list[ResponsesRequest] = []
        self._queue: list[Script] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    def agent(self, *replies: Script) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def agent_requests(self) -> list[ResponsesRequest]:
        return [r for r in self.requests if r.path.endswith("/responses") and r.tool_names]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def reply(self, request: ResponsesRequest) -> Reply:
        if not request.tool_names:
            return Reply.say(self.default_text)
        with self._lock:
            script = self._queue.pop(0) if self._queue else None
        if script is None:
            return Reply.say(self.default_text)
        return script(request) if callable(script) else script

    def render(self, reply: Reply) -> bytes:
        rid = f"resp_{next(self._ids)}"
        items: list[dict[str, Any]] = []
        for call in reply.tool_calls:
            item = {
                "type": "function_call",
                "id": f"fc_{next(self._ids)}",
                "call_id": f"call_{next(self._ids)}",
                "name": call.name,
                "arguments": json.dumps(call.arguments),
            }
            if call.name.startswith("mcp__") and call.name.count("__") >= 2:
                # An MCP tool: Codex declares it inside the namespace tool ``mcp__<server>``.
                item["namespace"], item["name"] = call.name.rsplit("__", 1)
            items.append(item)
        if reply.text or not items:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{next(self._ids)}",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        events = [("response.created", {"type": "response.created", "response": {"id": rid}})]
        for item in items:
            events.append(
                ("response.output_item.done", {"type": "response.output_item.done", "item": item})
            )
        usage = {
            "input_tokens": 10,
            "input_tokens_details": None,
            "output_tokens": 5,
            "output_tokens_details": None,
            "total_tokens": 15,
        }
        events.append(
            (
                "response.completed",
                {"type": "response.completed", "response": {"id": rid, "usage": usage}},
            )
        )
        return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class _Handler(BaseHTTPRequestHandler):
    fake: ClassVar[FakeResponses]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith("/models"):
            self._send(
                200,
                json.dumps({"object": "list", "data": [], "models": []}).encode(),
                "application/json",
            )
        else:
            self._send(404, b'{"error": {"message": "no such endpoint"}}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        request = ResponsesRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.fake.requests.append(request)
        if not self.path.endswith("/responses"):
            self._send(404, b'{"error": {"message": "no such endpoint"}}', "application/json")
            return
        self._send(200, self.fake.render(self.fake.reply(request)), "text/event-stream")

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
