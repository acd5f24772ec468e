"""memlane's own messages in agent transcripts: not indexed as session messages.

A transcript records every memlane tool call the agent made and every result
memlane returned (search hits, expanded sections, transcript windows), and,
in pi, the prompt the ``/recall`` command sent. Indexed as session messages,
they come back in later searches as if they were conversation: recall would
find its own earlier answers. The sessions layer (engine/sessions/docs.py) leaves
them out:

- a tool call is memlane's when ``engine.echo.is_memlane_tool`` says so
  (pi's bare names, Claude Code's ``mcp__<memlane server>__<name>``): the
  call is dropped from the assistant message's tool document, and its result
  is not a document at all;
- pi's results name their tool (``toolName``); Claude Code's name only the
  call's id (``tool_use_id``), so ``OwnCalls`` remembers the ids of
  memlane's calls in file order, and looks back before the read position
  for a call made before it (a pass that started between a call and its
  result);
- a user message that is a ``/recall`` prompt is not a document.

Auto-context and the other hidden messages memlane injects are pi
``custom_message`` entries (Claude Code: hook output lines), which the
sessions layer never indexes anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memlane.engine.journal.echo import RECALL_PROMPT_PREFIX, is_memlane_tool
from memlane.transcripts.jsonl import parse_line

#: Bytes whose absence proves a transcript holds none of memlane's own
#: messages: memlane's tool names all start with ``memory_``.
MARKERS = (b"memory_", RECALL_PROMPT_PREFIX.encode())


def may_hold_own_messages(data: bytes) -> bool:
    """False when *data* (a whole transcript) cannot hold any of memlane's messages."""
    return any(marker in data for marker in MARKERS)


def _blocks(obj: dict[str, Any], kind: str) -> Iterable[dict[str, Any]]:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return ()
    return (b for b in content if isinstance(b, dict) and b.get("type") == kind)


_CODEX_CALLS = frozenset({"function_call", "custom_tool_call"})
_CODEX_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


class OwnCalls:
    """The ids of memlane's tool calls in one Claude Code transcript."""

    def __init__(self) -> None:
        self.own: set[str] = set()
        self.seen: set[str] = set()  # every call id met, memlane's or not

    def note(self, obj: dict[str, Any]) -> None:
        """Remember the calls of one transcript line (assistant lines carry them;
        in a Codex rollout, ``function_call`` items, an MCP tool's with its namespace)."""
        payload = obj.get("payload")
        if obj.get("type") == "response_item" and isinstance(payload, dict):
            call_id, name = payload.get("call_id"), payload.get("name")
            is_call = str(payload.get("type")) in _CODEX_CALLS
            if is_call and isinstance(call_id, str):
                namespace = payload.get("namespace")
                if isinstance(namespace, str) and namespace and isinstance(name, str):
                    name = f"{namespace}__{name}"
                self.seen.add(call_id)
                if is_memlane_tool(name):
                    self.own.add(call_id)
            return
        if obj.get("type") != "assistant":
            return
        for block in _blocks(obj, "tool_use"):
            call_id = block.get("id")
            if not isinstance(call_id, str):
                continue
            self.seen.add(call_id)
            if is_memlane_tool(block.get("name")):
                self.own.add(call_id)

    def owns(self, call_id: object) -> bool:
        return isinstance(call_id, str) and call_id in self.own

    @staticmethod
    def result_ids(obj: dict[str, Any]) -> set[str]:
        """The call ids a user line answers with tool results (a Codex rollout: its outputs)."""
        payload = obj.get("payload")
        if obj.get("type") == "response_item" and isinstance(payload, dict):
            call_id = payload.get("call_id")
            is_output = str(payload.get("type")) in _CODEX_OUTPUTS
            return {call_id} if is_output and isinstance(call_id, str) else set()
        if obj.get("type") != "user":
            return set()
        ids = (block.get("tool_use_id") for block in _blocks(obj, "tool_result"))
        return {i for i in ids if isinstance(i, str)}

    def look_back(self, path: Path, end: int, wanted: set[str]) -> None:
        """Find the calls in ``wanted`` among the lines before byte ``end``.

        Only when a read starts after a call and before its result, so
        rarely; each line is searched for the ids as bytes before any is
        parsed.
        """
        needles = [call_id.encode() for call_id in wanted - self.seen]
        if not needles or end <= 0:
            return
        try:
            with path.open("rb") as handle:
                position = 0
                for raw in handle:
                    position += len(raw)
                    if position > end:
                        return
                    called = b"tool_use" in raw or b"function_call" in raw
                    if called and any(n in raw for n in needles):
                        obj = parse_line(raw.rstrip(b"\r\n"))
                        if obj is not None:
                            self.note(obj)
        except OSError:
            return  # gone meanwhile: its results stay unrecognised, as before
