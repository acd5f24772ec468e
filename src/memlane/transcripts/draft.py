"""What a format reader extracts from one entry before clipping and layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Draft:
    role: str
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    timestamp: str | float | None = None
    # Markers carry a short text and are clipped harder than turns.
    marker: bool = False


def text_of_blocks(content: Any) -> str:
    """The text of a string or a list of content blocks: text blocks only.

    Thinking, images and tool blocks are dropped here on purpose: L3 shows what
    was said, and those are either private reasoning, binary, or shown as
    one-line tool calls elsewhere.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(part for part in parts if part)


def text_with_results(content: Any) -> str:
    """Text of any content shape, tool results included (their content may
    itself be a string or blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            parts.append(text_with_results(block.get("content")))
    return "\n".join(p for p in parts if p)
