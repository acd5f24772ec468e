"""Which format a transcript line belongs to, and its reader."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memlane.transcripts import claude, codex, opencode, pi
from memlane.transcripts.jsonl import SNIFF_LINES
from memlane.transcripts.message import Message, Skip
from memlane.transcripts.model import CLAUDE_CODE, CODEX, OPENCODE, PI

MessageReader = Callable[[dict[str, Any]], Message | Skip]


def format_of(obj: dict[str, Any]) -> str | None:
    """PI for a pi session header, CLAUDE_CODE for a Claude Code line, OPENCODE for
    the header of an OpenCode session's copy, else None."""
    if opencode.is_header(obj):
        return OPENCODE
    if pi.is_header(obj):
        return PI
    if claude.looks_like_claude(obj):
        return CLAUDE_CODE
    if codex.looks_like_codex(obj):
        return CODEX
    return None


def sniff(objs: Iterable[dict[str, Any] | None]) -> str | None:
    """The format of the first line among the leading ``SNIFF_LINES`` that tells."""
    for n, obj in enumerate(objs):
        if n >= SNIFF_LINES:
            return None
        if obj is not None and (found := format_of(obj)) is not None:
            return found
    return None


def message_reader(fmt: str) -> MessageReader:
    """The message-by-message reader of format ``fmt`` (PI, CLAUDE_CODE, CODEX or OPENCODE)."""
    if fmt == CODEX:
        return codex.message
    if fmt == OPENCODE:
        return opencode.message
    return pi.message if fmt == PI else claude.message
