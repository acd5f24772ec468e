"""What L3 shows of a transcript carries no secret.

A transcript file is the host's (pi's, Claude Code's), written as the
conversation went: a key pasted into a prompt is in it verbatim. memlane
stores nothing from it unredacted (capture, the sessions index), and the
turns ``memory_transcript`` shows go through the same scanner, so an MCP or
sidecar reply never carries a secret either, and neither does the CLI's.
"""

from __future__ import annotations

from dataclasses import replace

from memlane.store.redaction import redact
from memlane.transcripts import Transcript
from memlane.transcripts.model import ToolCall, Turn


def redacted_transcript(transcript: Transcript) -> Transcript:
    """*transcript* with every turn's text and tool-call arguments redacted."""
    return replace(transcript, turns=tuple(_turn(turn) for turn in transcript.turns))


def _turn(turn: Turn) -> Turn:
    calls = tuple(_call(call) for call in turn.tool_calls)
    return replace(turn, text=redact(turn.text).text, tool_calls=calls)


def _call(call: ToolCall) -> ToolCall:
    # Each value on its own line, keyed: a keyword rule ("password=...")
    # sees its key, and one value's redaction cannot run into the next.
    args = tuple((key, redact(f"{key}={value}").text.split("=", 1)[-1]) for key, value in call.args)
    return replace(call, args=args)
