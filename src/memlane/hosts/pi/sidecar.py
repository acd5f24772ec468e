"""``memlane sidecar``: the engine behind a host, over JSON-RPC on stdio (the sidecar protocol, hosts/pi/sidecar.py).

One JSON object per line on stdin/stdout, logs on stderr only, exit on stdin
EOF: no pidfile, no daemon, so the sidecar can never outlive its host.

Requests are answered in order by one engine thread (an index connection
belongs to one thread); the main thread only reads lines, so the engine can
wait for the host's answer to ``llm.complete`` while the host keeps
talking. Nothing waits for the embedding model: ``session_start`` answers at
once and the model warms up in the background.

| method | params | result |
|---|---|---|
| session_start | {cwd, session_id, transcript_path, host, reason?} | {snapshot, notices[]} |
| before_agent_start | {prompt} | {system_append, message: {content} or null} |
| agent_settled | {exchange: {user, assistant, aborted, entry_id, session_id, transcript_path, tools?}} | {queued, reason?} |
| session_compact | {} | {snapshot} |
| session_shutdown | {} | {flushed, pending} |
| tool | {name, arguments} | {text, details} |
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.errors import MemlaneError
from memlane.engine.live.slot import SessionSlot
from memlane.hosts.jsonrpc import (
    APPLICATION_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Connection,
    RemoteError,
    Request,
    RpcError,
)

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.engine.tools.dispatch import Tools

log = logging.getLogger("memlane.sidecar")

# How long the engine waits for the host to answer llm.complete beyond the
# LLM deadline itself (the host's own request also needs a moment).
HOST_CALL_SLACK_S = 2.0


class _ParamsError(Exception):
    pass


def _obj(params: Any, method: str) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise _ParamsError(f"{method}: params must be an object")
    return params


def _str(params: dict[str, Any], key: str, method: str, *, required: bool = False) -> str | None:
    value = params.get(key)
    if value is None:
        if required:
            raise _ParamsError(f"{method}: missing required param {key!r}")
        return None
    if not isinstance(value, str):
        raise _ParamsError(f"{method}: {key} must be a string, got {value!r}")
    return value


class Sidecar:
    def __init__(
        self, connection: Connection, directory: Path, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.conn = connection
        # The current project and session, and the rules for switching them:
        # the engine's (engine/live/slot.py), so every long-lived host keeps them alike.
        self.slot = SessionSlot(directory, clock=clock)
        self.tools: Tools | None = None
        self._work: queue.Queue[Request | None] = queue.Queue()
        self._engine = threading.Thread(target=self._engine_loop, name="memlane-engine")

    # -- lifecycle ------------------------------------------------------------------

    def run(self) -> int:
        self._engine.start()
        try:
            self.conn.serve(self._work.put)
        finally:
            self._work.put(None)
            self._engine.join()
        return 0

    def _engine_loop(self) -> None:
        while True:
            request = self._work.get()
            if request is None:
                self._at_eof()
                return
            self._answer(request)

    def _at_eof(self) -> None:
        flush = self.slot.close()  # captures still get written when pi left without a shutdown
        if flush is not None:
            log.info("stdin closed: captures flushed=%s pending=%s", flush.flushed, flush.pending)

    @property
    def session(self) -> Session | None:
        return self.slot.session

    def _answer(self, request: Request) -> None:
        handler = self._HANDLERS.get(request.method)
        try:
            if handler is None:
                raise RpcError(
                    METHOD_NOT_FOUND,
                    f"unknown method {request.method!r}; the methods are "
                    + ", ".join(self._HANDLERS),
                )
            result = handler(self, _obj(request.params, request.method))
        except _ParamsError as exc:
            self._error(request, RpcError(INVALID_PARAMS, str(exc)))
        except RpcError as exc:
            self._error(request, exc)
        except MemlaneError as exc:
            self._error(request, RpcError(APPLICATION_ERROR, str(exc), {"hint": exc.hint}))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            self._error(
                request,
                RpcError(INTERNAL_ERROR, f"internal error in {request.method}: {exc!r}"),
            )
        else:
            if request.id is not None:
                self.conn.reply(request.id, result)

    def _error(self, request: Request, error: RpcError) -> None:
        if request.id is not None:
            self.conn.reply_error(request.id, error)
        else:
            log.warning("%s (notification) failed: %s", request.method, error.message)

    # -- engine objects ---------------------------------------------------------------

    def _tools(self) -> Tools:
        from memlane.engine.tools.dispatch import Tools

        if self.tools is None or self.tools.session is not self.session:
            self.tools = Tools(self.slot.open_memory(), self.session)
        return self.tools

    def _host_call(self, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        try:
            result = self.conn.request("llm.complete", params, timeout_s + HOST_CALL_SLACK_S)
        except RemoteError as exc:
            raise RuntimeError(f"the host could not complete: {exc}") from None
        if not isinstance(result, dict):
            raise RuntimeError(f"the host answered llm.complete with {type(result).__name__}")
        return result

    def _require_session(self, method: str) -> Session:
        if self.session is None:
            raise RpcError(
                APPLICATION_ERROR, f"{method} before session_start: start a session first"
            )
        return self.session

    # -- methods ------------------------------------------------------------------------

    def session_start(self, params: dict[str, Any]) -> dict[str, Any]:
        method = "session_start"
        session_id = _str(params, "session_id", method, required=True)
        assert session_id is not None
        session = self.slot.start(
            _str(params, "cwd", method),
            session_id=session_id,
            transcript_path=_str(params, "transcript_path", method),
            host=_str(params, "host", method) or "unknown",
            host_call=self._host_call,
        )
        return {"snapshot": session.snapshot.text, "notices": list(session.notices)}

    def before_agent_start(self, params: dict[str, Any]) -> dict[str, Any]:
        prompt = _str(params, "prompt", "before_agent_start") or ""
        injection = self._require_session("before_agent_start").before_agent_start(prompt)
        return injection.to_json()

    def agent_settled(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.core.types import Exchange

        method = "agent_settled"
        raw = params.get("exchange")
        if not isinstance(raw, dict):
            raise _ParamsError(f"{method}: params.exchange must be an object")
        aborted = raw.get("aborted", False)
        if not isinstance(aborted, bool):
            raise _ParamsError(f"{method}: exchange.aborted must be a boolean")
        # The names of every tool the run called (optional): lets capture
        # tell an answer that only restated recalled memory from one that
        # also did work.
        tools = raw.get("tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, str) for t in tools)
        ):
            raise _ParamsError(f"{method}: exchange.tools must be a list of tool names")
        exchange = Exchange(
            user=_str(raw, "user", method) or "",
            assistant=_str(raw, "assistant", method) or "",
            aborted=aborted,
            entry_id=_str(raw, "entry_id", method),
            session_id=_str(raw, "session_id", method),
            transcript_path=_str(raw, "transcript_path", method),
            tools=None if tools is None else tuple(tools),
        )
        return self._require_session(method).agent_settled(exchange).to_json()

    def session_compact(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"snapshot": self._require_session("session_compact").compacted()}

    def session_shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        flush = self.slot.end()
        return flush.to_json() if flush is not None else {"flushed": True, "pending": 0}

    def tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = _str(params, "name", "tool", required=True)
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise _ParamsError("tool: arguments must be an object")
        assert name is not None
        return self._tools().call(name, arguments).to_json()

    _HANDLERS: ClassVar[dict[str, Callable[[Sidecar, dict[str, Any]], dict[str, Any]]]] = {
        "session_start": session_start,
        "before_agent_start": before_agent_start,
        "agent_settled": agent_settled,
        "session_compact": session_compact,
        "session_shutdown": session_shutdown,
        "tool": tool,
    }


def run_sidecar(
    directory: Path | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
) -> int:
    """Serve until stdin closes. stdout carries protocol lines only."""
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MEMLANE_LOG_LEVEL", "WARNING").upper(),
        format="memlane sidecar: %(levelname)s %(name)s: %(message)s",
    )
    reader = stdin or sys.stdin.buffer
    writer = stdout or sys.stdout.buffer
    # Anything else printing to stdout would corrupt the protocol: send it to stderr.
    sys.stdout = sys.stderr
    sidecar = Sidecar(Connection(reader, writer), directory or Path.cwd(), clock=clock)
    return sidecar.run()
