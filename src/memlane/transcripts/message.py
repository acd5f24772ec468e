"""One transcript entry as conversation, whatever the format: what the
message-by-message readers (``pi.message``, ``claude.message``) yield.

Values stay as the transcript wrote them (raw tool names and arguments,
timestamps as strings or epoch numbers): the sessions layer and the
topic search each apply their own rules (redaction, clipping, which tools
are memlane's own) on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# Roles of a Message.
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"  # tool results
BASH = "bash"  # a shell command run by the user (pi's ``!cmd``)
SUMMARY = "summary"  # compaction and branch summaries


class Skip(Enum):
    """Why an entry yields no message."""

    SILENT = "silent"  # a known entry that is not conversation (header, metadata, meta lines)
    UNKNOWN = "unknown"  # a type or shape the reader does not know (counted, never fatal)


@dataclass(frozen=True)
class ToolUse:
    """A tool call as written: ``name`` and ``args`` are not checked or clipped."""

    name: object
    args: object


@dataclass(frozen=True)
class ToolOutput:
    """One tool result's text, and the id of the call it answers (Claude Code)."""

    text: str
    call_id: object = None


@dataclass(frozen=True)
class Message:
    entry_id: str
    role: str  # USER | ASSISTANT | TOOL | BASH | SUMMARY
    # Text blocks only for user and assistant turns (no thinking, images or
    # tool blocks); the summary for SUMMARY; the command and its output for BASH.
    text: str
    # The entry's timestamps as written, its own first (pi's message may carry
    # a second one).
    timestamps: tuple[object, ...] = ()
    calls: tuple[ToolUse, ...] = ()  # ASSISTANT: the tool calls it made
    outputs: tuple[ToolOutput, ...] = ()  # TOOL: the results it carries
    tool: object = None  # TOOL: the tool whose result this is, when the format says
    sidechain: bool = False  # Claude Code: a subagent's conversation
