"""Clipping: the drafts of a window's entries become Turns.

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

from memlane.transcripts.draft import Draft
from memlane.transcripts.model import ToolCall, Turn
from memlane.transcripts.times import local_time

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
