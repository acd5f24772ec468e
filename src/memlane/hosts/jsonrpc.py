"""JSON-RPC 2.0 over a pair of byte streams, one JSON object per line.

Both sides may send requests: the host asks the engine (events, tools) and
the engine may ask the host (``llm.complete``). One reader thread reads
every line; answers to our own requests complete their waiters, incoming
requests go to ``on_request``. Writes are serialised so two threads never
interleave a line.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
APPLICATION_ERROR = -32000  # an expected failure: the message says what to do


class RpcError(Exception):
    """An error to send back as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


class RemoteError(Exception):
    """The other side answered one of our requests with an error."""

    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else str(error)
        super().__init__(str(message))
        self.error = error


@dataclass
class Request:
    id: Any  # None for a notification
    method: str
    params: Any


class _Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: Any = None
        self.error: Any = None
        self.answered = False


def _without_lone_surrogates(value: Any) -> Any:
    """JSON text from JavaScript may carry a lone surrogate (``\\ud83d``, half
    an emoji cut by a slice); it cannot be written as UTF-8 anywhere, so it
    becomes U+FFFD on the way in."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return value
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


class Connection:
    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._waiters_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.closed = threading.Event()

    # -- sending ------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        try:
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
            line.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (a string cut inside an emoji): escaped, it is
            # still valid JSON, and the reply must never be dropped.
            line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        with self._write_lock:
            try:
                self._writer.write(line.encode("utf-8"))
                self._writer.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed.set()  # the host is gone; the reader will see EOF

    def reply(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def reply_error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Ask the other side and wait for its answer (``TimeoutError`` past the deadline)."""
        request_id = f"memlane-{next(self._ids)}"
        waiter = _Waiter()
        with self._waiters_lock:
            self._waiters[request_id] = waiter
        try:
            if self.closed.is_set():
                raise ConnectionError("the host closed the connection")
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            if not waiter.event.wait(timeout_s):
                if self.closed.is_set():
                    raise ConnectionError("the host closed the connection")
                raise TimeoutError(f"{method} got no answer within {timeout_s:g} s")
            if waiter.error is None and not waiter.answered:
                raise ConnectionError("the host closed the connection before answering")
        finally:
            with self._waiters_lock:
                self._waiters.pop(request_id, None)
        if waiter.error is not None:
            raise RemoteError(waiter.error)
        return waiter.result

    # -- receiving ------------------------------------------------------------------

    def serve(self, on_request: Callable[[Request], None]) -> None:
        """Read until EOF; each incoming request is handed to ``on_request``."""
        try:
            for raw in self._reader:
                line = raw.strip()
                if not line:
                    continue
                self._dispatch(line, on_request)
        finally:
            self.closed.set()
            with self._waiters_lock:
                for waiter in self._waiters.values():
                    waiter.event.set()

    def _dispatch(self, line: bytes, on_request: Callable[[Request], None]) -> None:
        try:
            message = _without_lone_surrogates(json.loads(line))
        except (ValueError, UnicodeDecodeError) as exc:
            self.reply_error(None, RpcError(PARSE_ERROR, f"not a JSON object: {exc}"))
            return
        except RecursionError:
            self.reply_error(None, RpcError(PARSE_ERROR, "not a JSON object: nested too deeply"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.reply_error(
                message.get("id") if isinstance(message, dict) else None,
                RpcError(INVALID_REQUEST, 'expected a JSON-RPC 2.0 object ("jsonrpc": "2.0")'),
            )
            return
        if "method" not in message:
            self._complete(message)
            return
        method = message.get("method")
        if not isinstance(method, str):
            self.reply_error(
                message.get("id"), RpcError(INVALID_REQUEST, "method must be a string")
            )
            return
        on_request(Request(message.get("id"), method, message.get("params")))

    def _complete(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        with self._waiters_lock:
            waiter = self._waiters.get(str(request_id))
        if waiter is None:
            return  # a late answer to a request we gave up on
        if "error" in message:
            waiter.error = message["error"]
        else:
            waiter.result = message.get("result")
        waiter.answered = True
        waiter.event.set()
