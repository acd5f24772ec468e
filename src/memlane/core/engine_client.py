"""A thin client's JSON-RPC connection to the warm engine (standard library only).

For the callers that make calls one at a time and are asked nothing back:
the CLI's fast path, ``memlane mcp``, ``memlane engine``, a Milvus Lite
holder asking the engine to let go. Reaching or starting the engine is
core/link.py's; the JSON is core/jsonlite.py's (no ``json`` import).
"""

from __future__ import annotations

import _socket
import time

from memlane.core.jsonlite import dumps, loads
from memlane.core.link import EngineSlow, EngineUnavailable, Place, reach, rpc_header


class EngineError(RuntimeError):
    """The engine answered a call with an error: its message and hint."""

    def __init__(self, message: str, hint: str | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


class EngineGone(EngineUnavailable):
    """The engine closed the connection before answering."""


class Client:
    """A JSON-RPC connection to the engine for calls one at a time (the CLI,
    ``memlane mcp``, ``memlane engine``). The engine asks such a client nothing."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self._ids = 0

    @classmethod
    def open(
        cls, place: Place, client: str, cwd: str, deadline: float, *, start: bool, **meta: object
    ) -> Client:
        """Reach the engine (starting it when *start*) and introduce this client."""
        sock = reach(place, deadline, start=start)
        try:
            sock.settimeout(None)
            sock.sendall(rpc_header(client, cwd, **meta))
        except OSError as exc:  # an engine that was exiting accepted, then went away
            sock.close()
            raise EngineGone(f"the engine went away: {exc}") from None
        return cls(sock)

    def call(self, method: str, params: dict[str, object], timeout_s: float) -> object:
        """The result of *method* (``EngineError`` for an error answer, ``EngineGone``
        when the engine hung up, ``EngineSlow`` past *timeout_s*)."""
        self._ids += 1
        request_id = self._ids
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        deadline = time.monotonic() + timeout_s
        try:
            self._sock.settimeout(max(timeout_s, 0.01))
            self._sock.sendall(dumps(line).encode("ascii") + b"\n")
            while True:
                answer = loads(self._read_line(deadline))
                if isinstance(answer, dict) and answer.get("id") == request_id:
                    break
        except TimeoutError:
            raise EngineSlow(f"the engine did not answer {method} within {timeout_s:g} s") from None
        except (ConnectionError, BrokenPipeError) as exc:
            raise EngineGone(f"the engine went away during {method}: {exc}") from None
        error = answer.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            hint = data.get("hint") if isinstance(data, dict) else None
            code = error.get("code")
            raise EngineError(
                str(error.get("message") or "the engine failed"),
                hint if isinstance(hint, str) else None,
                code if isinstance(code, int) else None,
            )
        return answer.get("result")

    def notify(self, method: str, params: dict[str, object]) -> None:
        """Send *method* as a notification: the engine answers nothing (``EngineGone``
        when it hung up)."""
        import json

        line = {"jsonrpc": "2.0", "method": method, "params": params}
        try:
            self._sock.settimeout(None)
            self._sock.sendall(json.dumps(line).encode("utf-8") + b"\n")
        except OSError as exc:
            raise EngineGone(f"the engine went away before {method}: {exc}") from None

    def is_open(self) -> bool:
        """Whether the engine still holds this connection (it hangs up when it stops
        or exits idle): a call sent on a closed one would be lost."""
        if self._buffer:
            return True
        try:
            self._sock.setblocking(False)
            try:
                return self._sock.recv(1, _socket.MSG_PEEK) != b""
            finally:
                self._sock.setblocking(True)
        except BlockingIOError:
            return True  # open, nothing to read
        except OSError:
            return False

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            self._sock.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("end of stream")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:  # contextlib's import would cost the CLI more than the rest of its exit
            return

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
