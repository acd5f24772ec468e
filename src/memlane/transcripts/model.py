"""The values L3 recall returns: a window of turns on one branch of a transcript.

Plain frozen dataclasses with ``to_json()`` so the CLI, the
sidecar and MCP all show the same thing; ``Transcript.render()`` is the text
the agent sees as memory_transcript's answer (laid out here, next to the
values, so the layout needs no module that imports these back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlane.transcripts.times import local_time

# Roles of a Turn. "user" and "assistant" are the conversation; the others are
# one-line markers that sit between turns without counting toward the window.
USER = "user"
ASSISTANT = "assistant"
COMPACTION = "compaction"
BRANCH_SUMMARY = "branch_summary"
BASH = "bash"
CUSTOM = "custom"
EVENT = "event"  # any other entry, shown only when it is the target itself
CONVERSATION_ROLES = frozenset({USER, ASSISTANT})

PI = "pi"
CLAUDE_CODE = "claude-code"
CODEX = "codex"
OPENCODE = "opencode"  # its sessions' JSONL copy (transcripts/opencode.py)
#: Formats whose lines are pi's entry shapes (read by pi's indexer and drafts).
PI_SHAPED = frozenset({PI, OPENCODE})


@dataclass(frozen=True)
class ToolCall:
    """One tool call, already clipped: at most a few args, each short."""

    name: str
    args: tuple[tuple[str, str], ...] = ()
    more_args: bool = False

    def render(self) -> str:
        parts = [f"{key}={value}" for key, value in self.args]
        if self.more_args:
            parts.append("…")
        return f"{self.name}({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args), "more_args": self.more_args}


@dataclass(frozen=True)
class Turn:
    """One rendered entry of the branch: a user/assistant turn or a marker.

    ``ids`` lists every transcript entry folded into this turn (Claude Code
    writes one assistant reply as several lines sharing a message id); ``id``
    is the first of them.
    """

    id: str
    role: str
    text: str
    time: str | None = None  # local HH:MM
    timestamp: str | None = None  # as the transcript wrote it
    tool_calls: tuple[ToolCall, ...] = ()
    folded_results: int = 0
    is_target: bool = False
    truncated: bool = False
    ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ids": list(self.ids or (self.id,)),
            "role": self.role,
            "time": self.time,
            "timestamp": self.timestamp,
            "text": self.text,
            "tool_calls": [call.render() for call in self.tool_calls],
            "folded_results": self.folded_results,
            "is_target": self.is_target,
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class Transcript:
    """A window of one branch of a transcript file."""

    path: str
    format: str  # PI | CLAUDE_CODE
    session_id: str | None
    target: str | None  # the resolved entry id, or None for the live branch
    turns: tuple[Turn, ...]
    branch_entries: int = 0  # entries on the walked root→tip path
    branch_turns: int = 0  # user/assistant turns on that path
    parent_session: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def render(self) -> str:
        return render_transcript(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "session_id": self.session_id,
            "parent_session": self.parent_session,
            "target": self.target,
            "branch_entries": self.branch_entries,
            "branch_turns": self.branch_turns,
            "turns": [turn.to_json() for turn in self.turns],
            "notes": list(self.notes),
        }


_LABELS = {
    USER: "user",
    ASSISTANT: "assistant",
    COMPACTION: "compaction",
    BRANCH_SUMMARY: "branch summary",
    BASH: "bash",
    CUSTOM: "extension",
    EVENT: "entry",
}


def render_transcript(transcript: Transcript) -> str:
    where = f"{transcript.format} session {transcript.session_id or '?'}"
    lines = [f"Transcript {transcript.path} ({where})"]
    if transcript.parent_session:
        lines.append(f"Forked from {transcript.parent_session}")
    shown = sum(1 for t in transcript.turns if t.role in CONVERSATION_ROLES)
    if transcript.target:
        lines.append(
            f"Around entry {transcript.target}: {shown} of {transcript.branch_turns} turns "
            f"on its branch"
        )
    else:
        lines.append(f"Live branch: last {shown} of {transcript.branch_turns} turns")
    # Turns show HH:MM only, so the local dates they span go in the header.
    dates = sorted({d for t in transcript.turns if (d := local_time(t.timestamp, "%Y-%m-%d"))})
    if dates:
        lines.append(f"Local date: {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else ""))
    lines.extend(f"Note: {note}" for note in transcript.notes)
    if not transcript.turns:
        lines.append("")
        lines.append("(no user or assistant turns on this branch)")
    for turn in transcript.turns:
        lines.append("")
        lines.append(_render_turn(turn))
    return "\n".join(lines)


def _render_turn(turn: Turn) -> str:
    when = f"[{turn.time}] " if turn.time else ""
    target = "  ◀ target" if turn.is_target else ""
    label = _LABELS.get(turn.role, turn.role)
    if turn.role not in CONVERSATION_ROLES:
        return f"{when}── {label}: {turn.text} ({turn.id}){target}"
    out = [f"{when}{label} ({turn.id}){target}"]
    out.extend(f"  {line}" for line in turn.text.splitlines())
    if not turn.text and not turn.tool_calls:
        out.append("  (no text)")
    out.extend(f"  → {call.render()}" for call in turn.tool_calls)
    if turn.folded_results:
        plural = "s" if turn.folded_results != 1 else ""
        out.append(f"  ({turn.folded_results} tool result{plural} folded)")
    return "\n".join(out)
