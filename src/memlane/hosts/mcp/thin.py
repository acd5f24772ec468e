"""``memlane mcp``: the memory tools over MCP on stdio, ready as soon as it starts.

An MCP client (Claude Code, Cursor, Codex) starts this server with its
session and lists its tools before the first turn; a server that answers
late is left out ("still connecting"), and so are its tools. So this server
is standard library and memlane's light modules only: it answers
``initialize``, ``ping`` and ``tools/list`` in milliseconds, without the
engine or the ``mcp`` SDK, and hands each ``tools/call`` to the warm engine
(hosts/mcp/calls.py), which it starts in the background at ``initialize``.

What it speaks, MCP's stdio transport over JSON-RPC 2.0 (one message per
line), the handshake era of the protocol:

- ``initialize``: the client's protocol version when this server knows it
  (``PROTOCOL_VERSIONS``), else the newest it knows; the ``tools``
  capability, the server's name, version and instructions;
- ``ping`` (also before ``initialize``), ``tools/list`` (every tool of the
  one catalog, hosts/mcp/tools.py), ``tools/call`` (answered with a result,
  errors included, never a protocol error): calls that change memory in
  order on one worker thread, read-only calls on a second one with its own
  engine connection, so a search is not held behind a big write (a read
  the engine cannot answer joins the first line); Codex's hook calls
  (``codex_hook``, unlisted) on a third, each its own hook request to the
  engine, as a hook process would send it (hosts/claude_code/hook_client.py);
- the notifications ``initialized`` and ``cancelled`` (a cancelled call is
  never answered, and not run if it has not started); others are ignored;
- any other request gets ``-32601`` (Method not found); ``tools/list`` or
  ``tools/call`` before ``initialize`` gets ``-32602``, as the SDK answers.

A client that probes ``server/discover`` (the SDK's own client does) gets
``-32601`` and falls back to ``initialize``. Every line is read with the
shared size cap and checked by the shared rules (hosts/wire.py): a malformed
line is answered with its JSON-RPC error at once, lone surrogates become
U+FFFD, and every line written is strict JSON. While serving, fd 1 points
at stderr (stray output from any library cannot corrupt the protocol) and
fd 0 at the null device (nothing else can consume the client's messages).
"""

from __future__ import annotations

import fcntl
import os
import queue
import sys
import threading
from collections.abc import Callable

from memlane.core.process import leave_ctrl_c_to_the_main_thread
from memlane.hosts.mcp.calls import START_S, Calls, log_to_stderr, logger
from memlane.hosts.mcp.tools import (
    CODEX_HOOK_CLIENT,
    CODEX_HOOK_TOOL,
    INSTRUCTIONS,
    READ_ONLY,
    SERVER_NAME,
    tool_definitions,
)
from memlane.hosts.wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Message,
    OversizedLine,
    Refused,
    check_line,
    encode_message,
    error_response,
    is_blank,
    read_line,
)

# What this imports is its whole start-up cost: not even typing or logging,
# which together would cost more than the rest (logging comes at first use).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from memlane.core.clock import Clock
    from memlane.core.link import Place

    # A queued tools/call: (request id, tool name, arguments).
    _Call = tuple[Any, str, dict[str, Any] | None]

#: The revisions of MCP's ``initialize`` handshake this server speaks, oldest
#: first: the ``mcp`` SDK's ``HANDSHAKE_PROTOCOL_VERSIONS`` (tests/hosts/test_mcp.py
#: holds them equal). The last is offered to a client asking for another.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHODS = ("initialize", "ping", "tools/list", "tools/call")
#: At the end of input, how long the call in progress may take to finish.
EXIT_WAIT_S = 15.0
#: After Ctrl-C, how long it may take.
INTERRUPT_WAIT_S = 1.0
#: The main thread looks for Ctrl-C at least this often while stdin is read.
SIGNAL_SLICE_S = 0.25


class Problem(Exception):
    """A request answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Server:
    """One client's session: reads its lines, answers them, queues its tool calls."""

    def __init__(
        self,
        directory: str,
        out: IO[bytes],
        *,
        clock: Clock | None = None,
        start_s: float = START_S,
    ) -> None:
        self.calls = Calls(directory, clock=clock, start_s=start_s)
        # Read-only calls, on their own engine connection (never in this process).
        self.reads = Calls(directory, clock=clock, start_s=start_s)
        self.initialized = False
        self._out = out
        self._out_lock = threading.Lock()
        self._tools: list[dict[str, Any]] | None = None
        self._work: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._reads: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._hooks: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending: set[Any] = set()
        self._cancelled: set[Any] = set()
        self._worker = threading.Thread(
            target=self._work_loop, name="memlane-mcp-calls", daemon=True
        )
        self._worker.start()
        self._reads_worker = threading.Thread(
            target=self._reads_loop, name="memlane-mcp-reads", daemon=True
        )
        self._reads_worker.start()
        self._hooks_worker = threading.Thread(
            target=self._hooks_loop, name="memlane-mcp-hooks", daemon=True
        )
        self._hooks_worker.start()

    # -- input ----------------------------------------------------------------------------

    def serve(self, stream: IO[bytes]) -> None:
        """Answer every message of *stream* until its end (``finish`` next)."""
        while (line := read_line(stream)) is not None:
            if is_blank(line):
                continue  # between messages, not one: no answer (wire.is_blank)
            checked = check_mcp_line(line)
            if isinstance(checked, Refused):
                logger().warning("refused a malformed message: %s", checked.reason)
                if checked.reply is not None:
                    self.send(checked.reply)
                continue
            self.handle(checked.body)

    def handle(self, body: dict[str, Any]) -> None:
        method = body.get("method")
        if not isinstance(method, str):
            return  # an answer to a request: this server sends none
        params = body.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in body:
            self._notified(method, params)
            return
        request_id = body["id"]
        try:
            result = self._answer(request_id, method, params)
        except Problem as exc:
            self.send(error_response(request_id, exc.code, exc.message, exc.data))
            return
        if result is not None:
            self.send({"jsonrpc": "2.0", "id": request_id, "result": result})
        if method == "initialize":
            self.calls.start()  # after the answer: the client need not wait for it
            self.reads.start()

    def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> Any:
        """The result of a request (None: answered later, by the worker)."""
        if method == "initialize":
            result = self._initialize(params)
            self.initialized = True
            return result
        if method == "ping":
            return {}
        if method not in METHODS:
            served = ", ".join(METHODS)
            raise Problem(
                METHOD_NOT_FOUND, f"Method not found: {method} (memlane serves {served})", method
            )
        if not self.initialized:
            raise Problem(INVALID_PARAMS, f"{method} before initialize: send initialize first")
        if method == "tools/list":
            if self._tools is None:
                self._tools = tool_definitions()
            return {"tools": self._tools}
        arguments = params.get("arguments")
        name = str(params["name"])
        with self._lock:
            self._pending.add(request_id)
        if name == CODEX_HOOK_TOOL:
            lane = self._hooks
        else:
            lane = self._reads if name in READ_ONLY else self._work
        lane.put((request_id, name, arguments))
        return None

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        from memlane.core.version import __version__

        requested = params.get("protocolVersion")
        if not isinstance(requested, str) or any(
            not isinstance(params.get(key, {}), dict) for key in ("capabilities", "clientInfo")
        ):
            raise Problem(
                INVALID_PARAMS,
                'initialize needs "protocolVersion" (a string), "capabilities" and '
                '"clientInfo" (objects)',
            )
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self.initialized = True
        elif method == "notifications/cancelled":
            with self._lock:
                request_id = params.get("requestId")
                if request_id in self._pending:
                    self._cancelled.add(request_id)

    # -- the calls --------------------------------------------------------------------------

    def _work_loop(self) -> None:
        self._serve_lane(self._work, self.calls.call, self.calls.close, "the memory")

    def _reads_loop(self) -> None:
        # A read the engine cannot answer (None) joins the first line, to be
        # answered in this process if need be.
        self._serve_lane(
            self._reads, self.reads.call_engine, self.reads.close, "the engine connection"
        )

    def _hooks_loop(self) -> None:
        # The engine's place, found at the first hook and kept (the server's
        # environment does not change), not found again for every hook.
        def hook(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
            return _codex_hook(self.calls.place, name, arguments)

        self._serve_lane(self._hooks, hook, lambda: None, "the hook calls")

    def _serve_lane(
        self,
        lane: queue.SimpleQueue[_Call | None],
        answer: Callable[[str, dict[str, Any] | None], dict[str, Any] | None],
        close: Callable[[], None],
        what: str,
    ) -> None:
        """Answer *lane*'s calls in order until its end (None), then close."""
        leave_ctrl_c_to_the_main_thread()
        while (item := lane.get()) is not None:
            request_id, name, arguments = item
            if self._dropped(request_id, done=False):
                continue
            result = answer(name, arguments)
            if result is None:
                self._work.put(item)
            elif not self._dropped(request_id, done=True):
                self.send({"jsonrpc": "2.0", "id": request_id, "result": result})
        try:
            close()
        except Exception:
            logger().exception("closing %s failed", what)

    def _dropped(self, request_id: Any, *, done: bool) -> bool:
        """Whether the client cancelled the call (it gets no answer)."""
        with self._lock:
            cancelled = request_id in self._cancelled
            if cancelled or done:
                self._cancelled.discard(request_id)
                self._pending.discard(request_id)
        return cancelled

    def finish(self, wait_s: float = EXIT_WAIT_S) -> None:
        """No more input: let the call in progress finish (within *wait_s*), hang up on the
        engine and close the memory."""
        # Reads first: one the engine cannot answer still joins the other line.
        self._hooks.put(None)  # a Stop in progress hands its turn over before the exit
        self._reads.put(None)
        self._reads_worker.join(wait_s)
        self._hooks_worker.join(wait_s)
        self._work.put(None)
        self._worker.join(wait_s)

    # -- output ---------------------------------------------------------------------------

    def send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        """One line to the client; a client already gone is no error here."""
        line = encode_message(message)
        with self._out_lock:
            try:
                self._out.write(line)
                self._out.flush()
            except (OSError, ValueError):
                pass


def _codex_hook(place: Place, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """A Codex hook call: its arguments (the hook input, filled in by Codex from the
    templates ``memlane install codex`` wrote) to the engine as the hook request a hook
    process sends, for this server's parent (Codex); the engine's answer (Codex's hook
    output JSON, or nothing) as the text. A failure is recorded and answered with
    nothing, as the hook process would: Codex goes on without memory for that event."""
    from memlane.core.jsonlite import dumps
    from memlane.core.link import CODEX_HOOK_HEADER
    from memlane.hosts.claude_code.hook_client import answer

    raw = dumps(arguments or {}).encode("ascii")
    output = answer(raw, CODEX_HOOK_HEADER, CODEX_HOOK_CLIENT, os.getppid(), place)
    return {"content": [{"type": "text", "text": output.decode("utf-8", "replace")}]}


# -- checking a line ------------------------------------------------------------------------


def check_mcp_line(line: bytes | OversizedLine) -> Message | Refused:
    """``wire.check_line`` plus MCP's own shape (what passes, the SDK accepts too)."""
    return check_line(line, also=_check_mcp)


def _check_mcp(message: Message) -> Message | Refused:
    """The shape MCP adds to JSON-RPC, checked so the error can say what to send."""
    body = message.body
    if "method" in body:
        method, params = body["method"], body.get("params")
        problem: str | None = None
        if isinstance(params, list):
            problem = f"{method}: MCP params are an object (named arguments), not an array"
        elif method == "tools/call":
            problem = _tool_call_problem(params)
        if problem is None:
            return message
        reply = error_response(body.get("id"), INVALID_PARAMS, problem) if "id" in body else None
        return Refused(reply, problem)
    if "result" in body and not isinstance(body["result"], dict):
        problem = "a response's result must be an object in MCP"
        return Refused(error_response(None, INVALID_REQUEST, problem), problem)
    if "error" in body:
        error = body["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if (
            not isinstance(error, dict)
            or not isinstance(code, int)
            or isinstance(code, bool)
            or not isinstance(error.get("message"), str)
        ):
            problem = 'an error response needs "error": {"code": <integer>, "message": <string>}'
            return Refused(error_response(None, INVALID_REQUEST, problem), problem)
    return message


def _tool_call_problem(params: Any) -> str | None:
    usage = 'send "params": {"name": "<tool>", "arguments": {...}}'
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return f"tools/call needs the tool's name as a string; {usage}"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return f"tools/call: arguments must be an object; {usage}"
    return None


# -- the process ---------------------------------------------------------------------------


def _take_fd(
    fd: int, stand_in: Callable[[], int], mode: str
) -> tuple[IO[bytes], Callable[[], None]]:
    """The wire behind *fd* as a private stream, *fd* itself pointed at *stand_in*.

    Falls back to the process's own stream where descriptors cannot be moved.
    """
    fallback = sys.stdin.buffer if fd == 0 else sys.stdout.buffer
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return fallback, lambda: None
    try:
        replacement = stand_in()
        os.dup2(replacement, fd)
        os.close(replacement)
    except OSError:
        os.close(private)
        return fallback, lambda: None

    def restore() -> None:
        try:
            os.dup2(private, fd)
        except OSError:  # contextlib unimported: see the imports
            return

    # closefd=False: the descriptor must never be closed and reused under a reader.
    stream: IO[bytes] = os.fdopen(private, mode, closefd=False)
    return stream, restore


def _serve_off_the_main_thread(server: Server, stream: IO[bytes]) -> None:
    """``server.serve(stream)`` on a daemon thread, the main thread waiting in slices.

    Python runs Ctrl-C's handler only in the main thread, between two steps of
    Python code. A main thread blocked reading stdin took it only when the
    signal interrupted that very read: a signal that came just before the
    read, or to another thread, left it waiting for the client's next line.
    """
    done = threading.Event()
    failed: list[BaseException] = []

    def read() -> None:
        leave_ctrl_c_to_the_main_thread()
        try:
            server.serve(stream)
        except BaseException as exc:  # handed to the main thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=read, name="memlane-mcp-stdin", daemon=True).start()
    while not done.wait(SIGNAL_SLICE_S):
        pass
    if failed:
        raise failed[0]


def run(directory: str, *, clock: Clock | None = None) -> int:
    """Serve on stdin/stdout until the client closes stdin (0), or Ctrl-C (130).
    Logs go to stderr."""
    log_to_stderr()
    wire_in, restore_in = _take_fd(0, lambda: os.open(os.devnull, os.O_RDONLY), "rb")
    wire_out, restore_out = _take_fd(1, lambda: os.dup(2), "wb")
    server = Server(directory, wire_out, clock=clock)
    try:
        try:
            _serve_off_the_main_thread(server, wire_in)
        except KeyboardInterrupt:
            sys.stderr.write("memlane: interrupted\n")
            server.finish(INTERRUPT_WAIT_S)
            return 130
        server.finish()
        return 0
    except KeyboardInterrupt:  # again, while finishing
        return 130
    finally:
        restore_out()
        restore_in()
