"""Transcript entries to the sessions layer's documents: which messages are
documents, their text (redacted, clipped) and whether they get a vector.

The formats are read by ``transcripts.pi.message`` and
``transcripts.claude.message`` (the readers L3 shares); the rules here are
the sessions layer's own: memlane's own tool calls, results and /recall
prompts are left out (engine/sessions/own_messages.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memlane.core.clock import from_epoch
from memlane.core.settings import SessionsSettings
from memlane.engine.journal.echo import is_memlane_tool, is_recall_prompt
from memlane.engine.sessions.own_messages import OwnCalls
from memlane.transcripts import message as m
from memlane.transcripts.model import PI

# Bounds on what one document stores: a pasted log or a huge tool output
# would bloat the FTS index without helping recall.
MAX_TEXT_CHARS = 8000
MAX_TOOL_CHARS = 2000


def utc_iso(value: object) -> str | None:
    """A transcript timestamp (ISO string or epoch number) as UTC ``...mmmZ``."""
    moment: datetime
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else float(value)
        if seconds <= 0:
            return None
        moment = from_epoch(seconds)
    elif isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    else:
        return None
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# Redaction scans this much past a document's limit, so that a secret the
# cut would halve is still recognised whole (and no half of it is kept).
CLIP_SCAN_MARGIN = 512


def redact_text(text: str) -> str:
    """*text* with its secrets replaced (store/redaction.py), as the index keeps it."""
    from memlane.store.redaction import redact

    return redact(text).text


def _clip(text: str, limit: int) -> str:
    """The document text: redacted, then cut to *limit* characters."""
    text = redact_text(text.strip()[: limit + CLIP_SCAN_MARGIN]).strip()
    return text if len(text) <= limit else text[:limit] + " …"


def _redacted_values(value: object) -> object:
    """*value* with every string in it redacted: scanned as text (real line
    breaks, plain quotes), before JSON escapes hide a secret's context."""
    if isinstance(value, str):
        return redact_text(value[: MAX_TOOL_CHARS + CLIP_SCAN_MARGIN])
    if isinstance(value, dict):
        return {key: _redacted_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted_values(item) for item in value]
    return value


def _call_text(name: object, args: object) -> str:
    args = _redacted_values(args)
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True) if args else ""
    return f"{name or '?'}({shown})"


class Doc:
    """What one line yields before the file's identity is known."""

    __slots__ = ("entry_id", "part", "role", "text", "timestamp")

    def __init__(
        self, entry_id: str, role: str, text: str, timestamp: str | None, part: str = ""
    ) -> None:
        self.entry_id = entry_id
        self.role = role
        self.text = text
        self.timestamp = timestamp
        self.part = part


def documents(read: m.Message | m.Skip, fmt: str, own: OwnCalls | None = None) -> list[Doc] | None:
    """Documents of one entry as a format reader read it; None for an entry
    the reader does not know (counted as unknown).

    ``own`` knows memlane's tool calls met so far in a Claude Code file (the
    caller notes every line in it first): their results are left out.
    """
    if read is m.Skip.UNKNOWN:
        return None
    if isinstance(read, m.Skip):
        return []
    stamp = next((s for s in map(utc_iso, read.timestamps) if s is not None), None)
    entry_id = read.entry_id
    if read.role == m.USER:
        if fmt == PI and is_recall_prompt(read.text):
            return []  # memlane's own /recall prompt, a pi command (engine/sessions/own_messages.py)
        return [Doc(entry_id, "user", _clip(read.text, MAX_TEXT_CHARS), stamp)]
    if read.role == m.ASSISTANT:
        out = [Doc(entry_id, "assistant", _clip(read.text, MAX_TEXT_CHARS), stamp)]
        calls = [
            _call_text(call.name, call.args)
            for call in read.calls
            if not is_memlane_tool(call.name)
        ]
        if calls:
            out.append(
                Doc(entry_id, "tool", _clip("\n".join(calls), MAX_TOOL_CHARS), stamp, "tool")
            )
        return out
    if read.role == m.TOOL:
        if is_memlane_tool(read.tool):
            return []  # memlane's own answer: recalled memory, not conversation
        outputs = [o for o in read.outputs if not (own is not None and own.owns(o.call_id))]
        if not outputs:
            return []  # only memlane's own answers
        joined = "\n".join(o.text for o in outputs if o.text)
        text = f"{read.tool or 'tool'} result: {joined}"
        return [Doc(entry_id, "tool", _clip(text, MAX_TOOL_CHARS), stamp)]
    if read.role == m.BASH:
        return [Doc(entry_id, "tool", _clip(read.text, MAX_TOOL_CHARS), stamp)]
    return [Doc(entry_id, "summary", _clip(read.text, MAX_TEXT_CHARS), stamp)]


def embeds(role: str, settings: SessionsSettings) -> bool:
    """Whether a document of ``role`` gets a vector (else lexical only)."""
    if role in ("user", "assistant"):
        return settings.index_messages
    if role == "summary":
        return settings.index_summaries
    return not settings.skip_tool_io
