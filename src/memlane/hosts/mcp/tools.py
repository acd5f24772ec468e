"""What ``memlane mcp`` tells a client: its name, instructions, tools and results, as MCP JSON.

The tool definitions are generated from ``engine.shared.tool_catalog.SPECS`` (name,
title, description, input schema, effect) and ``engine/shared/tool_outputs.py``
(the output schema), so MCP clients see exactly what pi and the CLI see,
recall ladder included. Those modules are light (no engine, no SDK), so
listing the tools costs a few milliseconds.

A call's result becomes text content (what the agent reads) plus
``structuredContent`` (the ``details``, held to the tool's ``outputSchema``).
Some clients hand the agent only ``structuredContent`` (Claude Code sends the
model its JSON in place of the text), so the details carry the text's
sentences too: its headline and what to call next. A failure becomes a
result with ``isError``, the message and the hint, so the model can correct
itself.
"""

from __future__ import annotations

from memlane.engine.shared.tool_catalog import SPECS
from memlane.engine.shared.tool_outputs import error_details, output_schema
from memlane.engine.shared.tool_spec import RECALL_LADDER

TYPE_CHECKING = False  # typing unimported on the server's start (thin.py)
if TYPE_CHECKING:
    from typing import Any

SERVER_NAME = "memlane"
INSTRUCTIONS = (
    "memlane is this project's long-term memory: plain markdown notes from earlier "
    "sessions, searchable by meaning and by exact words. Check it before re-deriving a "
    "past decision, and save decisions, facts and preferences worth keeping with "
    "memory_write. " + RECALL_LADDER
)
#: The hidden tool Codex's hooks call (``type = "mcp_tool"`` in its config.toml, written
#: by ``memlane install codex``): the hook's input in, Codex's hook output out, through
#: this already running server instead of a process per hook (docs/adr/0038). Not in
#: ``tools/list``: the model never sees it, Codex calls it by name.
CODEX_HOOK_TOOL = "codex_hook"
#: How the engine and ``client-failures.jsonl`` name those calls.
CODEX_HOOK_CLIENT = "codex hook"
#: The tools that change no memory: a call of one may be asked again safely.
READ_ONLY = frozenset(spec.name for spec in SPECS if spec.read_only)


def tool_definitions() -> list[dict[str, Any]]:
    """One MCP ``Tool`` per spec, generated so the two can never drift apart."""
    return [
        {
            "name": spec.name,
            "title": spec.title,
            "description": spec.description,
            "inputSchema": spec.json_schema(),
            "outputSchema": output_schema(spec.name),
            "annotations": {
                "title": spec.title,
                "readOnlyHint": spec.read_only,
                "destructiveHint": spec.destructive,
                "idempotentHint": spec.idempotent,
                # Only this machine's memory, never the open world.
                "openWorldHint": False,
            },
        }
        for spec in SPECS
    ]


def success_result(text: str, details: dict[str, Any]) -> dict[str, Any]:
    """A ``CallToolResult``: the text for the model, the details as structured content.

    The details go through JSON here: a stray ``Path`` or ``datetime`` in them
    becomes its text instead of failing the reply.
    """
    import json  # not at the server's start (core/jsonlite.py)

    structured = json.loads(json.dumps(details, ensure_ascii=False, default=str))
    return tool_result(text, structured)


def tool_result(text: str, structured: dict[str, Any]) -> dict[str, Any]:
    """A ``CallToolResult`` of *structured* details that are JSON values already
    (the engine's answer, read off the wire)."""
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def error_result(message: str, hint: str | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` with ``isError``: text for the model, structured for clients
    that show errors themselves."""
    text = message if not hint else f"{message}\nHint: {hint}"
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": error_details(message, hint),
        "isError": True,
    }
