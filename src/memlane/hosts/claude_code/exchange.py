"""The settled exchange of a Claude Code turn, read from its transcript.

Claude Code writes one JSONL line per content block, the lines of one API
reply sharing ``message.id`` (transcripts/claude.py reads each line). The
exchange a Stop hook settles is the last real user prompt (not a tool
result, not harness chatter, not a subagent's) and every assistant text of
the main conversation after it; ``tools`` names the tools called meanwhile
and ``entry_id`` is the uuid of the last assistant line, the same for every
Stop of that turn.

Only the file's tail is read (doubled until it holds the prompt): a long
session's transcript reaches hundreds of megabytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from memlane.core.types import Exchange
from memlane.transcripts import claude
from memlane.transcripts import message as m
from memlane.transcripts.jsonl import TRANSCRIPT_MAX_BYTES, open_transcript, parse_line

#: The first tail read; doubled while it does not reach the last user prompt.
TAIL_BYTES = 256 * 1024


def read_exchange(transcript_path: str, session_id: str) -> Exchange | None:
    """The last settled exchange of *transcript_path*, or None when there is none."""
    path = Path(transcript_path)
    with open_transcript(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        tail = TAIL_BYTES
        while True:
            start = max(0, size - tail)
            handle.seek(start)
            data = handle.read(size - start)
            if start > 0:
                data = data[data.find(b"\n") + 1 :]  # the first line may be cut
            messages = _messages(data)
            found = _exchange(messages, session_id, str(path.absolute()))
            if found is not None or start == 0 or tail >= TRANSCRIPT_MAX_BYTES:
                return found
            tail *= 2


def _messages(data: bytes) -> list[m.Message]:
    out = []
    for line in data.splitlines():
        obj = parse_line(line) if line.strip() else None
        if obj is None:
            continue
        message = claude.message(obj)
        if isinstance(message, m.Message) and not message.sidechain:
            out.append(message)
    return out


def _exchange(messages: list[m.Message], session_id: str, transcript: str) -> Exchange | None:
    last_user = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == m.USER and messages[i].text.strip():
            last_user = i
            break
    if last_user is None:
        return None
    texts: list[str] = []
    tools: list[str] = []
    entry_id = None
    for message in messages[last_user + 1 :]:
        if message.role != m.ASSISTANT:
            continue
        entry_id = message.entry_id
        if message.text.strip():
            texts.append(message.text.strip())
        tools.extend(str(call.name) for call in message.calls if isinstance(call.name, str))
    if entry_id is None:
        return None
    return Exchange(
        user=messages[last_user].text,
        assistant="\n\n".join(texts),
        entry_id=entry_id,
        session_id=session_id,
        transcript_path=transcript,
        tools=tuple(tools),
    )
