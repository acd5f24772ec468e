"""JSON-RPC 2.0 over a pair of byte streams, one JSON object per line.

Both sides may send requests: the host asks the engine (events, tools) and
the engine may ask the host (``llm.complete``). One reader thread reads
every line; answers to our own requests complete their waiters, incoming
requests go to ``on_request``. Writes are serialised so two threads never
interleave a line.

A request of ours that is no longer wanted (its deadline passed, its
session ended) is failed at once with ``Cancelled``, and the other side is
told with a notification naming its id (``llm.cancel {id}``), so it stops
the work instead of finishing it for nobody.

What a line may hold, and the error a malformed one is answered with, are
the wire rules of ``hosts/wire.py``, shared with ``memlane mcp``.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from memlane.hosts.wire import (
    APPLICATION_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    OversizedLine,
    Refused,
    check_line,
    encode_message,
    is_blank,
    read_line,
)

__all__ = [
    "APPLICATION_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Cancelled",
    "Connection",
    "RemoteError",
    "Request",
    "RpcError",
]

log = logging.getLogger("memlane.jsonrpc")


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


class Cancelled(Exception):
    """One of our requests was given up before its answer came (``Connection.cancel``)."""


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
    def __init__(self, method: str, cancel_notice: str | None) -> None:
        self.method = method
        self.cancel_notice = cancel_notice  # the notification that tells the other side
        self.event = threading.Event()
        self.result: Any = None
        self.error: Any = None
        self.answered = False
        self.cancelled: str | None = None  # why we gave it up


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

    def send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        # Strict JSON whatever the message holds (wire.encode_message): the
        # other side must never get a line it cannot parse, nor no line.
        line = encode_message(message)
        with self._write_lock:
            try:
                self._writer.write(line)
                self._writer.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed.set()  # the host is gone; the reader will see EOF

    def reply(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def reply_error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    def request(
        self, method: str, params: Any, timeout_s: float, *, cancel_notice: str | None = None
    ) -> Any:
        """Ask the other side and wait for its answer (``TimeoutError`` past the deadline,
        ``Cancelled`` when ``cancel`` gave it up first).

        ``cancel_notice``: the notification (``{id}``) that tells the other side
        to stop the work, sent when this request is given up (its deadline, or
        ``cancel``).
        """
        request_id = f"memlane-{next(self._ids)}"
        waiter = _Waiter(method, cancel_notice)
        with self._waiters_lock:
            self._waiters[request_id] = waiter
        try:
            if self.closed.is_set():
                raise ConnectionError("the host closed the connection")
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            if not waiter.event.wait(timeout_s):
                if self.closed.is_set():
                    raise ConnectionError("the host closed the connection")
                self._give_up(request_id, waiter)
                raise TimeoutError(f"{method} got no answer within {timeout_s:g} s")
            if waiter.cancelled is not None:
                raise Cancelled(f"{method} was cancelled: {waiter.cancelled}")
            if waiter.error is None and not waiter.answered:
                raise ConnectionError("the host closed the connection before answering")
        finally:
            with self._waiters_lock:
                self._waiters.pop(request_id, None)
        if waiter.error is not None:
            raise RemoteError(waiter.error)
        return waiter.result

    def cancel(self, method: str, reason: str) -> int:
        """Give up every request of ours to *method* still waiting for its answer: each
        fails at once with ``Cancelled`` (*reason*) and the other side is told. How
        many were cancelled."""
        with self._waiters_lock:
            given_up = [
                (request_id, waiter)
                for request_id, waiter in self._waiters.items()
                if waiter.method == method and not waiter.event.is_set()
            ]
            for _, waiter in given_up:
                waiter.cancelled = reason
                waiter.event.set()
        for request_id, waiter in given_up:
            self._tell_cancelled(request_id, waiter)
        return len(given_up)

    def _give_up(self, request_id: str, waiter: _Waiter) -> None:
        """Our deadline passed: the other side may stop the work."""
        with self._waiters_lock:
            if waiter.event.is_set():
                return  # answered (or cancelled) just now
            waiter.cancelled = "its deadline passed"
        self._tell_cancelled(request_id, waiter)

    def _tell_cancelled(self, request_id: str, waiter: _Waiter) -> None:
        if waiter.cancel_notice is not None and not self.closed.is_set():
            self.send(
                {"jsonrpc": "2.0", "method": waiter.cancel_notice, "params": {"id": request_id}}
            )

    # -- receiving ------------------------------------------------------------------

    def serve(self, on_request: Callable[[Request], None]) -> None:
        """Read until EOF; each incoming request is handed to ``on_request``.

        A malformed line is answered here with the JSON-RPC error it calls
        for (wire.check_line), and reading goes on.
        """
        try:
            while (line := read_line(self._reader)) is not None:
                if is_blank(line):
                    continue  # between messages, not one: no answer (wire.is_blank)
                self._dispatch(line, on_request)
        finally:
            self.closed.set()
            with self._waiters_lock:
                for waiter in self._waiters.values():
                    waiter.event.set()

    def _dispatch(self, line: bytes | OversizedLine, on_request: Callable[[Request], None]) -> None:
        checked = check_line(line)
        if isinstance(checked, Refused):
            log.warning("refused a malformed message: %s", checked.reason)
            if checked.reply is not None:
                self.send(checked.reply)
            if checked.answers is not None:
                # A broken answer to our own request: fail it now, not at its deadline.
                error = RpcError(INVALID_REQUEST, f"the answer was malformed: {checked.reason}")
                self._complete({"id": checked.answers, "error": error.to_json()})
            return
        message = checked.body
        if "method" not in message:
            self._complete(message)
            return
        on_request(Request(message.get("id"), message["method"], message.get("params")))

    def _complete(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        with self._waiters_lock:
            waiter = self._waiters.get(str(request_id))
            if waiter is None or waiter.cancelled is not None:
                return  # a late answer to a request we gave up on
            if "error" in message:
                waiter.error = message["error"]
            else:
                waiter.result = message.get("result")
            waiter.answered = True
            waiter.event.set()
