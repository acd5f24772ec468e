"""``memlane mcp``'s stdio transport: the SDK's, behind a reader that checks every line.

The SDK's own stdin reader drops what it cannot parse without a word (bad
JSON, a batch, a NaN id, a lone surrogate, 200+ levels of nesting), and
reads a line of any length into memory. Here each line is read with the
shared cap and checked by the shared rules (``hosts/wire.py``) first: a
malformed line is answered with its JSON-RPC error at once, a well-formed
one goes on to the SDK, lone surrogates replaced. Going out, a message the
SDK could not serialise (a lone surrogate in a tool's text) is cleaned the
same way instead of ending the server.

The SDK does the rest (stdout, the handshake, dispatch). As the SDK does
for its own reader, fd 0 is pointed at the null device while serving, so
nothing but this reader can consume the client's messages.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import IO, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from memlane.hosts.wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    Message,
    OversizedLine,
    Refused,
    check_line,
    encode_message,
    error_response,
    read_line,
    without_lone_surrogates,
)

log = logging.getLogger("memlane.mcp")


class LineWriter:
    """The client's stdout, shared by the SDK's writer and our error replies.

    The SDK writes one whole line per ``write`` call, then ``flush`` (as it
    would an anyio file); a lock keeps the two writers' lines apart.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text.encode("utf-8"), False)

    async def flush(self) -> None:
        await anyio.to_thread.run_sync(self._write, b"", True)

    async def write_line(self, line: bytes) -> None:
        """One of our own replies; a client already gone is no error here
        (the reader sees EOF next)."""
        with suppress(OSError, ValueError):
            await anyio.to_thread.run_sync(self._write, line, True)

    def _write(self, data: bytes, flush: bool) -> None:
        with self._lock:
            if data:
                self._stream.write(data)
            if flush:
                self._stream.flush()


class CheckedLines:
    """The client's stdin as the SDK reads it: only well-formed messages, one per line.

    Lines are read and checked on a daemon thread of their own (a 4 MiB line
    takes a while to parse): a read blocked on the client never holds up the
    event loop, nor the process's exit on Ctrl-C, as a blocked worker thread
    of the event loop would.
    """

    def __init__(self, stream: IO[bytes], out: LineWriter) -> None:
        self._stream = stream
        self._out = out
        send, receive = anyio.create_memory_object_stream[Message | Refused | None](1)
        self._send = send
        self._receive = receive
        self._reader: threading.Thread | None = None

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        if self._reader is None:
            self._reader = threading.Thread(
                target=self._read,
                args=(anyio.lowlevel.current_token(),),
                name="memlane-mcp-stdin",
                daemon=True,
            )
            self._reader.start()
        while True:
            checked = await self._receive.receive()
            if checked is None:
                raise StopAsyncIteration
            if isinstance(checked, Refused):
                log.warning("refused a malformed message: %s", checked.reason)
                if checked.reply is not None:
                    await self._out.write_line(encode_message(checked.reply))
                continue
            return encode_message(checked.body).decode("utf-8")

    def _read(self, token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            while True:
                checked = _next_checked(self._stream)
                anyio.from_thread.run(self._send.send, checked, token=token)
                if checked is None:
                    return
        except Exception as exc:  # the loop is gone (serving ended) or stdin broke
            log.debug("stdin reader stopped: %s", exc)
            with suppress(Exception):
                anyio.from_thread.run(self._send.send, None, token=token)


def _next_checked(stream: IO[bytes]) -> Message | Refused | None:
    """The next non-blank line, checked (None at EOF)."""
    while (line := read_line(stream)) is not None:
        if isinstance(line, bytes) and not line.strip():
            continue
        return check_mcp_line(line)
    return None


def check_mcp_line(line: bytes | OversizedLine) -> Message | Refused:
    """``wire.check_line`` plus MCP's own shape: what passes, the SDK accepts."""
    return check_line(line, also=_check_mcp)


def _check_mcp(message: Message) -> Message | Refused:
    """The shape MCP adds to JSON-RPC, checked here so the error can say what
    to send (the SDK answers only "Invalid request parameters")."""
    body = message.body
    request_id = body.get("id")
    if "method" in body:
        method, params = body["method"], body.get("params")
        problem: str | None = None
        if isinstance(params, list):
            problem = f"{method}: MCP params are an object (named arguments), not an array"
        elif method == "tools/call":
            problem = _tool_call_problem(params)
        if problem is None:
            return _sdk_accepts(message)
        reply = error_response(request_id, INVALID_PARAMS, problem) if "id" in body else None
        return Refused(reply, problem)
    if "result" in body and not isinstance(body["result"], dict):
        problem = "a response's result must be an object in MCP"
        return Refused(error_response(None, INVALID_REQUEST, problem), problem)
    if "error" in body:
        try:
            mcp_types.ErrorData.model_validate(body["error"])
        except ValidationError:
            problem = 'an error response needs "error": {"code": <integer>, "message": <string>}'
            return Refused(error_response(None, INVALID_REQUEST, problem), problem)
    return _sdk_accepts(message)


def _sdk_accepts(message: Message) -> Message | Refused:
    # The SDK's reader drops what its models refuse without a reply: anything
    # the checks above missed is refused here instead, with a reply.
    body = message.body
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(body)
    except ValidationError as exc:
        text = f"not an MCP message: {exc.errors()[0]['msg']}"
        request_id = body.get("id") if "method" in body else None
        return Refused(error_response(request_id, INVALID_REQUEST, text), text)
    return message


def _tool_call_problem(params: Any) -> str | None:
    usage = 'send "params": {"name": "<tool>", "arguments": {...}}'
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return f"tools/call needs the tool's name as a string; {usage}"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return f"tools/call: arguments must be an object; {usage}"
    return None


class CleanWriteStream:
    """The server's side of the write stream; a message the SDK's writer
    could not serialise (a lone surrogate) is sent with it replaced instead."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        try:
            item.message.model_dump_json(by_alias=True, exclude_unset=True)
        except PydanticSerializationError:
            cleaned = _cleaned(item.message)
            if cleaned is None:
                return
            item = SessionMessage(cleaned, metadata=item.metadata)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> CleanWriteStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def _cleaned(message: mcp_types.JSONRPCMessage) -> mcp_types.JSONRPCMessage | None:
    """*message* with its lone surrogates replaced; if even that is not JSON,
    an internal error for the request it answers (None: it answered none)."""
    dumped = message.model_dump(by_alias=True, exclude_unset=True)
    try:
        cleaned = mcp_types.jsonrpc_message_adapter.validate_python(without_lone_surrogates(dumped))
        cleaned.model_dump_json(by_alias=True, exclude_unset=True)
    except (ValidationError, PydanticSerializationError) as exc:
        log.error("a message could not be written as JSON: %s", exc)
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return None
        return mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=message.id,
            error=mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR,
                message="memlane could not write its answer as JSON; this is a memlane bug, "
                "the server log has the details",
            ),
        )
    return cleaned


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
        with suppress(OSError):
            os.dup2(private, fd)

    # closefd=False: a reader thread may still block on the descriptor after
    # serving ends; it must never be closed and reused under it.
    return cast(IO[bytes], os.fdopen(private, mode, closefd=False)), restore


@asynccontextmanager
async def checked_stdio() -> AsyncIterator[tuple[Any, CleanWriteStream]]:
    """The SDK's stdio transport with checked lines in and clean messages out."""
    wire_in, restore_in = _take_fd(0, lambda: os.open(os.devnull, os.O_RDONLY), "rb")
    # Stray output from any library lands on stderr, never in the protocol.
    wire_out, restore_out = _take_fd(1, lambda: os.dup(2), "wb")
    try:
        out = LineWriter(wire_out)
        # The SDK only iterates stdin and calls write/flush on stdout.
        async with stdio_server(
            stdin=cast(Any, CheckedLines(wire_in, out)), stdout=cast(Any, out)
        ) as (read_stream, write_stream):
            yield read_stream, CleanWriteStream(write_stream)
    finally:
        restore_out()
        restore_in()
