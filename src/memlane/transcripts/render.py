"""Clipping and layout: drafts become Turns, a Transcript becomes the text the
agent reads.

Everything here bounds output size: a turn is capped, a tool call is one line
with at most MAX_TOOL_ARGS short args, tool results are only counted, and
markers keep one clipped line. L3 is the most expensive rung of recall, so
every byte shown should be conversation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memlane.transcripts import model
from memlane.transcripts.draft import Draft
from memlane.transcripts.model import ToolCall, Transcript, Turn

MAX_TOOL_ARGS = 3
TOOL_ARG_CHARS = 60
MARKER_CHARS = 200
TRUNCATION = "… [truncated {n} more chars]"


def clip(text: str, cap: int) -> tuple[str, bool]:
    """*text* cut to at most *cap* characters of content, with a marker saying
    how much was cut."""
    if cap <= 0 or len(text) <= cap:
        return text, False
    return text[:cap].rstrip() + TRUNCATION.format(n=len(text) - cap), True


def one_line(text: str, cap: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 1].rstrip() + "…"


def _arg_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return one_line(text, TOOL_ARG_CHARS)


def tool_call(name: str, args: dict[str, Any]) -> ToolCall:
    items = list(args.items())
    clipped = tuple((str(key), _arg_value(value)) for key, value in items[:MAX_TOOL_ARGS])
    return ToolCall(one_line(name, TOOL_ARG_CHARS), clipped, len(items) > MAX_TOOL_ARGS)


def local_time(stamp: str | float | None, fmt: str = "%H:%M") -> str | None:
    """HH:MM (or *fmt*) in the machine's local zone, from an ISO string or epoch ms."""
    moment: datetime | None = None
    if isinstance(stamp, str) and stamp:
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            # A naive stamp is already local time: nothing to convert.
            return moment.strftime(fmt)
    elif isinstance(stamp, int | float) and not isinstance(stamp, bool):
        try:
            moment = datetime.fromtimestamp(stamp / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if moment is None:
        return None
    return moment.astimezone().strftime(fmt)


def build_turn(
    drafts: Sequence[tuple[str, Draft]], *, is_target: bool, folded: int, turn_char_cap: int
) -> Turn:
    """One Turn from the drafts of its entries (several for a split reply)."""
    first_id, first = drafts[0]
    text = "\n".join(d.text for _, d in drafts if d.text)
    if first.marker:
        text, truncated = one_line(text, MARKER_CHARS), False
    else:
        text, truncated = clip(text, turn_char_cap)
    calls = tuple(tool_call(name, args) for _, d in drafts for name, args in d.tool_calls)
    stamp = first.timestamp
    return Turn(
        id=first_id,
        role=first.role,
        text=text,
        time=local_time(stamp),
        timestamp=stamp if isinstance(stamp, str) else _iso(stamp),
        tool_calls=calls,
        folded_results=folded,
        is_target=is_target,
        truncated=truncated,
        ids=tuple(entry_id for entry_id, _ in drafts),
    )


def _iso(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    try:
        return datetime.fromtimestamp(stamp / 1000, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


_LABELS = {
    model.USER: "user",
    model.ASSISTANT: "assistant",
    model.COMPACTION: "compaction",
    model.BRANCH_SUMMARY: "branch summary",
    model.BASH: "bash",
    model.CUSTOM: "extension",
    model.EVENT: "entry",
}


def render_transcript(transcript: Transcript) -> str:
    where = f"{transcript.format} session {transcript.session_id or '?'}"
    lines = [f"Transcript {transcript.path} ({where})"]
    if transcript.parent_session:
        lines.append(f"Forked from {transcript.parent_session}")
    shown = sum(1 for t in transcript.turns if t.role in model.CONVERSATION_ROLES)
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
    if turn.role not in model.CONVERSATION_ROLES:
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
