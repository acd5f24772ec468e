"""The settled exchange of a Codex turn, read from its rollout (transcripts/codex.py).

A Codex turn is known by its ``turn_id`` (the Stop input names it, and every
item of the turn carries it). The exchange is the turn's prompt (the last
user message the person typed, not harness context) and every assistant
text after it; ``tools`` names the tools called meanwhile; ``entry_id`` is
the id of the last assistant item (the anchor's turn). The final answer the
Stop input names (``last_assistant_message``) is part of the exchange even
when the rollout does not hold it yet; a prompt the rollout does not hold
yet is the one the turn's UserPromptSubmit reported (*known_prompt*).

Only the file's tail is read (doubled until it holds the prompt).
"""

from __future__ import annotations

from pathlib import Path

from memlane.hosts.claude_code.exchange import Turn, settled_turn
from memlane.transcripts import codex
from memlane.transcripts import message as m
from memlane.transcripts.jsonl import parse_line, tails


def read_turn(
    rollout: str,
    session_id: str,
    turn_id: str | None,
    last_assistant: str | None = None,
    known_prompt: tuple[str, str] | None = None,
) -> Turn | None:
    """The settled turn *turn_id* (else the last one) of *rollout*, or None.

    *known_prompt*: (entry id, text) of the turn's prompt, used when the
    rollout does not hold it yet."""
    path = Path(rollout)
    found: Turn | None = None
    for data in tails(path):
        found = _turn(
            _items(data), session_id, str(path.absolute()), turn_id, last_assistant, known_prompt
        )
        if found is not None and found.key != "":
            return found
    return found if found is None else _keyed(found, turn_id)


def _keyed(turn: Turn, turn_id: str | None) -> Turn:
    return Turn(turn.exchange, turn_id or turn.exchange.entry_id or "", turn.ids)


def _items(data: bytes) -> list[tuple[m.Message, str | None]]:
    """(message, its turn id) of every conversation line."""
    out = []
    for line in data.splitlines():
        obj = parse_line(line) if line.strip() else None
        if obj is None:
            continue
        message = codex.message(obj)
        if isinstance(message, m.Message):
            payload = obj.get("payload")
            meta = (
                payload.get("internal_chat_message_metadata_passthrough")
                if isinstance(payload, dict)
                else None
            )
            turn = meta.get("turn_id") if isinstance(meta, dict) else None
            out.append((message, turn if isinstance(turn, str) else None))
    return out


def _turn(
    items: list[tuple[m.Message, str | None]],
    session_id: str,
    transcript: str,
    turn_id: str | None,
    last_assistant: str | None,
    known_prompt: tuple[str, str] | None,
) -> Turn | None:
    prompt_at = None
    for i in range(len(items) - 1, -1, -1):
        message, turn = items[i]
        mine = turn_id is None or turn in (turn_id, None)
        if message.role == m.USER and message.text.strip() and mine:
            prompt_at = i
            break
    if prompt_at is None:
        if known_prompt is None:
            return None
        prompt_id, prompt_text = known_prompt
        after: list[tuple[m.Message, str | None]] = [
            item for item in items if turn_id is not None and item[1] == turn_id
        ]
        key = ""  # the prompt is not in the file yet: read further back first
    else:
        prompt_id, prompt_text = items[prompt_at][0].entry_id, items[prompt_at][0].text
        after = []
        for item in items[prompt_at + 1 :]:
            if item[0].role == m.USER and item[0].text.strip():
                break  # the next turn's prompt
            after.append(item)
        key = turn_id or prompt_id
    return settled_turn(
        (prompt_id, prompt_text),
        (message for message, _ in after),
        session_id,
        transcript,
        last_assistant,
        key,
    )
