"""pi session JSONL (``@earendil-works/pi-coding-agent``, session version 3).

Shapes, from the package's docs/session-format.md and
dist/core/session-manager.js:

- line 1 is the header ``{"type":"session","version":3,"id":<uuid>,
  "timestamp":<iso>,"cwd":...,"parentSession"?:<path of the forked file>}``;
- every other line is an entry ``{"type","id" (8 hex),"parentId" (null at the
  root),"timestamp" (iso)}``: ``message`` (``message.role`` user | assistant |
  toolResult | bashExecution | custom), ``compaction`` (``summary``,
  ``firstKeptEntryId``, ``tokensBefore``), ``branch_summary`` (``fromId``,
  ``summary``), ``custom_message``, ``model_change``,
  ``thinking_level_change``, ``custom``, ``label``, ``session_info``;
- pi 1.6 adds, within version 3: ``message`` with ``message.role`` system
  (the prompt sections and tool loadout, the first request's in full, later
  ones as patches), ``usage`` (usage outside the conversation, e.g. a cache
  warm) and ``context_edit`` (``targetId``, ``replacement``: changes only
  what later requests send; the raw entry stays as it was, and so does our
  reading of it). None of them is conversation;
- ``/tree`` branches in place (a new child of an earlier entry), ``/fork`` and
  ``/clone`` copy the path into a new file that keeps the entry ids;
- version 1 files (no ids) are linear; pi migrates them on load.
"""

from __future__ import annotations

from typing import Any

from memlane.transcripts import message as m
from memlane.transcripts import model
from memlane.transcripts.draft import Draft, text_of_blocks, text_with_results
from memlane.transcripts.tree import (
    K_ASSISTANT,
    K_MARKER,
    K_SILENT,
    K_TOOL,
    K_USER,
    Index,
    Node,
)

_ROLE_KINDS = {
    "user": K_USER,
    "assistant": K_ASSISTANT,
    "toolResult": K_TOOL,
    "bashExecution": K_MARKER,
    "custom": K_MARKER,
    "hookMessage": K_MARKER,  # v2's name for "custom"
    "branchSummary": K_MARKER,
    "compactionSummary": K_MARKER,
    "system": K_SILENT,  # pi 1.6: prompt sections and tool loadout
}
_TYPE_KINDS = {
    "compaction": K_MARKER,
    "branch_summary": K_MARKER,
    "custom_message": K_MARKER,
    "model_change": K_SILENT,
    "thinking_level_change": K_SILENT,
    "custom": K_SILENT,
    "label": K_SILENT,
    "session_info": K_SILENT,
    "usage": K_SILENT,
    "context_edit": K_SILENT,
}


# Roles and entry types that are never conversation (known, so not "unknown").
_SILENT_ROLES = frozenset({"custom", "hookMessage", "system"})
_SILENT_TYPES = frozenset(
    {
        "model_change",
        "thinking_level_change",
        "custom",
        "label",
        "session_info",
        "custom_message",
        "usage",
        "context_edit",
    }
)


def is_header(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "session" and isinstance(obj.get("id"), str)


class PiIndexer:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.version = 3
        self.header_seen = False
        self.previous: str | None = None  # for version 1's linear entries

    def add(self, obj: dict[str, Any], order: int, offset: int) -> None:
        index = self.index
        kind_name = obj.get("type")
        if kind_name == "session":
            if not self.header_seen:
                self.header_seen = True
                index.session_id = _str(obj.get("id"))
                index.parent_session = _str(obj.get("parentSession"))
                version = obj.get("version")
                self.version = version if isinstance(version, int) else 1
            return
        entry_id = obj.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            if self.version >= 2:
                index.missing_ids += 1
                return
            # Legacy linear file: the line number stands in for the id.
            entry_id = f"L{order}"
            parent = self.previous
        else:
            raw_parent = obj.get("parentId")
            parent = raw_parent if isinstance(raw_parent, str) and raw_parent else None
        if kind_name == "message":
            message = obj.get("message")
            role = message.get("role") if isinstance(message, dict) else None
            kind = _ROLE_KINDS.get(role) if isinstance(role, str) else None
            if kind is None:
                index.unknown_types[f"message/{role}"] += 1
                kind = K_SILENT
        else:
            known = _TYPE_KINDS.get(kind_name) if isinstance(kind_name, str) else None
            if known is None:
                index.unknown_types[str(kind_name)] += 1
                known = K_SILENT
            kind = known
        index.add(Node(entry_id, parent, order, offset, kind))
        self.previous = entry_id


def message(obj: dict[str, Any]) -> m.Message | m.Skip:
    """One entry as conversation, for reading a session message by message."""
    kind = obj.get("type")
    entry_id = obj.get("id")
    if kind == "session":
        return m.Skip.SILENT
    if not isinstance(entry_id, str) or not entry_id:
        return m.Skip.UNKNOWN
    if kind == "message":
        raw = obj.get("message")
        if not isinstance(raw, dict):
            return m.Skip.UNKNOWN
        role = raw.get("role")
        stamps = (obj.get("timestamp"), raw.get("timestamp"))
        content = raw.get("content")
        if role == "user":
            return m.Message(entry_id, m.USER, text_of_blocks(content), stamps)
        if role == "assistant":
            calls = tuple(
                m.ToolUse(block.get("name"), block.get("arguments"))
                for block in content or []
                if isinstance(block, dict) and block.get("type") == "toolCall"
            )
            return m.Message(entry_id, m.ASSISTANT, text_of_blocks(content), stamps, calls)
        if role == "toolResult":
            output = m.ToolOutput(text_with_results(content))
            return m.Message(
                entry_id, m.TOOL, "", stamps, outputs=(output,), tool=raw.get("toolName")
            )
        if role == "bashExecution":
            text = f"!{raw.get('command')}\n{raw.get('output') or ''}"
            return m.Message(entry_id, m.BASH, text, stamps)
        if role in ("branchSummary", "compactionSummary"):
            return m.Message(entry_id, m.SUMMARY, str(raw.get("summary") or ""), stamps)
        return m.Skip.SILENT if role in _SILENT_ROLES else m.Skip.UNKNOWN
    if kind in ("compaction", "branch_summary"):
        summary = str(obj.get("summary") or "")
        return m.Message(entry_id, m.SUMMARY, summary, (obj.get("timestamp"),))
    return m.Skip.SILENT if kind in _SILENT_TYPES else m.Skip.UNKNOWN


def draft(obj: dict[str, Any]) -> Draft:
    kind_name = obj.get("type")
    timestamp = obj.get("timestamp")
    if kind_name == "message":
        raw = obj.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        stamp = timestamp if isinstance(timestamp, str) else message.get("timestamp")
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            return Draft(model.USER, text_of_blocks(content), timestamp=stamp)
        if role == "assistant":
            calls = [
                (str(block.get("name") or "?"), _args(block.get("arguments")))
                for block in content or []
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
            return Draft(model.ASSISTANT, text_of_blocks(content), calls, stamp)
        if role == "toolResult":
            status = "error" if message.get("isError") else "ok"
            return Draft(
                model.EVENT, f"tool result of {message.get('toolName')} ({status})", [], stamp, True
            )
        if role == "bashExecution":
            return Draft(
                model.BASH,
                f"!{message.get('command')} (exit {message.get('exitCode')})",
                [],
                stamp,
                True,
            )
        if role in ("branchSummary", "compactionSummary"):
            role_name = model.BRANCH_SUMMARY if role == "branchSummary" else model.COMPACTION
            return Draft(role_name, str(message.get("summary") or ""), [], stamp, True)
        if role == "system":
            return Draft(model.EVENT, _system_change(message), [], stamp, True)
        label = message.get("customType") or role
        return Draft(model.CUSTOM, f"[{label}] {text_of_blocks(content)}", [], stamp, True)
    stamp = timestamp if isinstance(timestamp, str) else None
    if kind_name == "compaction":
        tokens = obj.get("tokensBefore")
        head = f"context compacted ({tokens} tokens before)" if tokens else "context compacted"
        return Draft(model.COMPACTION, f"{head}: {obj.get('summary') or ''}", [], stamp, True)
    if kind_name == "branch_summary":
        summary = obj.get("summary") or ""
        return Draft(model.BRANCH_SUMMARY, f"left branch summarized: {summary}", [], stamp, True)
    if kind_name == "custom_message":
        text = text_of_blocks(obj.get("content"))
        return Draft(model.CUSTOM, f"[{obj.get('customType')}] {text}", [], stamp, True)
    if kind_name == "model_change":
        text = f"model changed to {obj.get('provider')}/{obj.get('modelId')}"
    elif kind_name == "thinking_level_change":
        text = f"thinking level set to {obj.get('thinkingLevel')}"
    elif kind_name == "label":
        text = f"label {obj.get('label')!r} on {obj.get('targetId')}"
    elif kind_name == "session_info":
        text = f"session named {obj.get('name')!r}"
    elif kind_name == "usage":
        text = f"usage ({obj.get('kind')}) of {obj.get('provider')}/{obj.get('model')}"
    elif kind_name == "context_edit":
        edit = "left out of" if obj.get("replacement") is None else "replaced in"
        text = f"entry {obj.get('targetId')} {edit} later model context"
    else:
        text = f"{kind_name} entry"
    return Draft(model.EVENT, text, [], stamp, True)


def _system_change(message: dict[str, Any]) -> str:
    """A pi 1.6 system message in one line: which prompt sections and tools it changed."""
    parts = []
    sections = message.get("sections")
    if isinstance(sections, dict) and sections:
        parts.append("prompt sections " + ", ".join(sorted(str(name) for name in sections)))
    for field, verb in (("toolsAdded", "tools added"), ("toolsRemoved", "tools removed")):
        tools = message.get(field)
        if isinstance(tools, list) and tools:
            names = [str(t.get("name")) for t in tools if isinstance(t, dict)]
            parts.append(f"{verb} {', '.join(names)}")
    return "system prompt: " + ("; ".join(parts) if parts else "updated")


def _args(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
