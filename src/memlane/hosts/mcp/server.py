"""``memlane mcp``: the agent tools (engine/tools/) over MCP on stdio.

The tool definitions are generated from ``engine.tools.catalog.SPECS`` (name,
description, input schema), so MCP clients see exactly what pi and the CLI
see, recall ladder included. A call goes through ``Tools.call``; its result
becomes text content (what the agent reads) plus ``structuredContent`` (the
``details``, held to the tool's ``outputSchema`` from engine/tools/outputs.py).
Some clients hand the agent only ``structuredContent`` (Claude Code sends the
model its JSON in place of the text), so the details carry the text's
sentences too: its headline and what to call next. A ``MemlaneError`` becomes a tool result with ``isError``, the
message and the hint, so the model can correct itself; nothing a tool does
can take the server down.

Uses the SDK's low-level ``Server``: the high-level ``MCPServer`` derives
schemas from typed Python functions, which would duplicate ``SPECS`` by hand.

MCP has no session lifecycle (no start, no settled exchange, no shutdown), so
there is no ``Session``: ``memory_write`` entries get the default anchor and
searches catch the index up first, as in the CLI.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.errors import MemlaneError
from memlane.engine.tools.catalog import SPECS
from memlane.engine.tools.outputs import error_details, output_schema
from memlane.engine.tools.spec import RECALL_LADDER, ToolResult
from memlane.hosts.mcp.transport import checked_stdio

if TYPE_CHECKING:
    from memlane.engine.live.background import Background
    from memlane.engine.project import Memory
    from memlane.engine.tools.dispatch import Tools

log = logging.getLogger("memlane.mcp")

SERVER_NAME = "memlane"
INSTRUCTIONS = (
    "memlane is this project's long-term memory: plain markdown notes from earlier "
    "sessions, searchable by meaning and by exact words. Check it before re-deriving a "
    "past decision, and save decisions, facts and preferences worth keeping with "
    "memory_write. " + RECALL_LADDER
)


def tool_definitions() -> list[types.Tool]:
    """One MCP tool per spec, generated so the two can never drift apart."""
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.json_schema(),
            output_schema=output_schema(spec.name),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                # Only this machine's memory, never the open world.
                open_world_hint=False,
            ),
        )
        for spec in SPECS
    ]


def success_result(result: ToolResult) -> types.CallToolResult:
    # Round-trip through JSON here, on the engine thread: a stray Path or datetime in
    # some details must not fail later inside the SDK's serializer, where it would
    # surface as a protocol error instead of a result.
    details = json.loads(json.dumps(result.details, ensure_ascii=False, default=str))
    return types.CallToolResult(
        content=[types.TextContent(text=result.text)],
        structured_content=details,
    )


def error_result(message: str, hint: str | None = None) -> types.CallToolResult:
    # Text for the model, structured for clients that show errors themselves.
    text = message if not hint else f"{message}\nHint: {hint}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=error_details(message, hint),
        is_error=True,
    )


class Engine:
    """The project's Memory and Tools, driven from one thread.

    An index connection belongs to the thread that opened it, while the SDK
    answers requests concurrently on an event loop: every call (and the
    open and close) is queued on a single-worker executor, in arrival order.
    """

    def __init__(self, directory: Path | None, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.directory = directory
        self.clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlane-mcp-engine")
        self._memory: Memory | None = None
        self._tools: Tools | None = None
        self._background: Background | None = None

    def start(self) -> None:
        """Open the memory ahead of the first call, without delaying the handshake."""
        self._executor.submit(self._open_quietly)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        return await asyncio.wrap_future(self._executor.submit(self.call_sync, name, arguments))

    def call_sync(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """One tool call, on the engine thread; every failure becomes an error result."""
        try:
            return success_result(self._open().call(name, arguments))
        except MemlaneError as exc:
            return error_result(exc.message, exc.hint)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return error_result(
                f"internal error in {name}: {exc!r}",
                "this is a memlane bug; memory_status shows the state, the server log the trace",
            )

    def close(self) -> None:
        self._executor.submit(self._close_memory)
        self._executor.shutdown(wait=True)

    # -- engine thread only -------------------------------------------------------------

    def _open(self) -> Tools:
        # Retried on each call until it succeeds, so fixing the problem the error
        # names (trust, config, store command) needs no client restart.
        if self._tools is None:
            from memlane.engine.live.background import start_background
            from memlane.engine.project import Memory
            from memlane.engine.tools.dispatch import Tools

            memory = Memory.open(self.directory, clock=self.clock)
            self._memory = memory
            self._tools = Tools(memory, write_anchor=_claude_code_session(memory))
            # What runs behind every host (engine/live/background.py): MCP has no
            # session events, so the sessions layer is kept current by the sweep.
            self._background = start_background(memory)
        return self._tools

    def _open_quietly(self) -> None:
        try:
            self._open()
        except MemlaneError as exc:
            log.warning("cannot open the memory yet: %s", exc)
        except Exception:
            log.exception("opening the memory failed")

    def _close_memory(self) -> None:
        # On the engine thread, after any open: a catch-up still running
        # starts no sweeper after this.
        if self._background is not None:
            self._background.stop(timeout_s=0.5)
        if self._memory is not None:
            self._memory.close()


def _claude_code_session(memory: Memory) -> Callable[[], tuple[str, str | None] | None]:
    """The Claude Code session running in this project, asked at each memory_write
    (hosts/claude_code/running.py): its entries get that session's anchor."""
    from memlane.hosts.claude_code import running

    parent = os.getppid()
    return lambda: running.current(memory.scope.collection, parent_pid=parent)


def build_server(engine: Engine) -> Server[Any]:
    from memlane import __version__

    tools = tool_definitions()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await engine.call(params.name, params.arguments)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(directory: Path | None, clock: Clock = SYSTEM_CLOCK) -> None:
    engine = Engine(directory, clock=clock)
    engine.start()
    server = build_server(engine)
    try:
        # Malformed lines are answered with their JSON-RPC error before the SDK
        # sees them, and fd 1 points at stderr while serving: stray output from
        # any library cannot corrupt the protocol stream.
        async with checked_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        # The client closed stdin: finish the call in progress, close the index, exit.
        engine.close()


def run_mcp(directory: Path | None = None, *, clock: Clock = SYSTEM_CLOCK) -> int:
    """Serve until the client closes stdin. Logs go to stderr."""
    import anyio

    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MEMLANE_LOG_LEVEL", "WARNING").upper(),
        format="memlane mcp: %(levelname)s %(name)s: %(message)s",
    )
    anyio.run(serve, directory, clock)
    return 0
