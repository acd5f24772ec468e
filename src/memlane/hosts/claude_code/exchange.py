"""The settled exchange of a Claude Code turn, read from its transcript.

Claude Code writes one JSONL line per content block, the lines of one API
reply sharing ``message.id`` (transcripts/claude.py reads each line). The
exchange a Stop hook settles is the last real user prompt (not a tool
result, not harness chatter, not a subagent's) and every assistant text of
the main conversation after it; ``tools`` names the tools called meanwhile
and ``entry_id`` is the uuid of the last assistant line (the anchor's
turn). The final answer Claude Code names in the Stop input
(``last_assistant_message``) is part of the exchange even when the
transcript does not hold it yet, and then the prompt alone is enough: the
exchange is that prompt and that answer, anchored to the prompt's uuid.
A turn is known by its prompt's uuid (``Turn.key``), the same for every
Stop of it however much of the answer each one saw.

Only the file's tail is read (doubled until it holds the prompt): a long
session's transcript reaches hundreds of megabytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memlane.core.types import Exchange
from memlane.transcripts import claude
from memlane.transcripts import message as m
from memlane.transcripts.jsonl import parse_line, tails

#: The first tail read; doubled while it does not reach the last user prompt.


@dataclass(frozen=True)
class Turn:
    """The settled exchange of one turn and the ids it is known by."""

    exchange: Exchange
    #: The prompt line's uuid: the same for every Stop of the turn.
    key: str
    #: Every uuid of the turn (prompt and answer lines): an earlier Stop's anchor is one of them.
    ids: tuple[str, ...]


def read_turn(
    transcript_path: str, session_id: str, last_assistant: str | None = None
) -> Turn | None:
    """The last settled turn of *transcript_path* (with *last_assistant*, the
    final answer the Stop input names), or None when there is none."""
    path = Path(transcript_path)
    for data in tails(path):
        found = _turn(_messages(data), session_id, str(path.absolute()), last_assistant)
        if found is not None:
            return found
    return None


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


def _turn(
    messages: list[m.Message], session_id: str, transcript: str, last_assistant: str | None
) -> Turn | None:
    last_user = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == m.USER and messages[i].text.strip():
            last_user = i
            break
    if last_user is None:
        return None
    prompt = messages[last_user]
    return settled_turn(
        (prompt.entry_id, prompt.text),
        messages[last_user + 1 :],
        session_id,
        transcript,
        last_assistant,
        prompt.entry_id,
    )


def settled_turn(
    prompt: tuple[str, str],
    after: Iterable[m.Message],
    session_id: str,
    transcript: str,
    last_assistant: str | None,
    key: str,
) -> Turn | None:
    """The turn of *prompt* (entry id, text) answered by the assistant messages
    among *after*, or None when there is no answer yet. *last_assistant*: the
    final answer the Stop input names, which the transcript may not hold yet."""
    texts: list[str] = []
    tools: list[str] = []
    ids = [prompt[0]]
    for message in after:
        if message.role != m.ASSISTANT:
            continue
        ids.append(message.entry_id)
        if message.text.strip():
            texts.append(message.text.strip())
        tools.extend(str(call.name) for call in message.calls if isinstance(call.name, str))
    last = (last_assistant or "").strip()
    if last and last not in "\n\n".join(texts):
        texts.append(last)
    if len(ids) == 1 and not last:
        return None  # no answer yet
    exchange = Exchange(
        user=prompt[1],
        assistant="\n\n".join(texts),
        entry_id=ids[-1],
        session_id=session_id,
        transcript_path=transcript,
        tools=tuple(tools),
    )
    return Turn(exchange, key, tuple(ids))
