"""Write one LoCoMo conversation as a memlane store (daily files, anchored entries).

The layout is what captured memory looks like: one daily file
``YYYY-MM-DD.md`` per session date, a ``## Session HH:MM`` heading per
LoCoMo session, and one ``### HH:MM`` entry per turn (or, with
``notes=True``, per observation fact) whose anchor's ``turn:`` is the
LoCoMo ``dia_id``, so a search hit maps back to the gold evidence.

The dataset itself is never copied into the repository: this module only
transforms a conversation already loaded from ``--data``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.core.scope import resolve_scope
from memlane.core.types import Anchor
from memlane.store.daily import format_entry

_SESSION_KEY_RE = re.compile(r"^session_(\d+)$")
_LOCOMO_TIME_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True)
class _Entry:
    turn: str
    text: str


@dataclass(frozen=True)
class _Session:
    number: int
    when: datetime
    entries: list[_Entry]


def parse_locomo_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → datetime(2023, 5, 8, 13, 56)."""
    return datetime.strptime(" ".join(text.split()), _LOCOMO_TIME_FORMAT)


def session_numbers(conversation: dict[str, Any]) -> list[int]:
    """N of every non-empty ``session_N``, ascending."""
    numbers = []
    for key, value in conversation.items():
        match = _SESSION_KEY_RE.match(key)
        if match and isinstance(value, list) and value:
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _turn_entries(turns: list[dict[str, Any]]) -> list[_Entry]:
    entries = []
    for turn in turns:
        text = f"{_one_line(turn['speaker'])}: {_one_line(turn.get('text', ''))}"
        caption = turn.get("blip_caption")
        if caption:
            text += f" [image: {_one_line(caption)}]"
        entries.append(_Entry(turn=str(turn["dia_id"]), text=text))
    return entries


def _note_entries(observation: Any) -> list[_Entry]:
    """Observation facts in dia_id order (``{speaker: [[fact, dia_id], ...]}``)."""
    facts: list[tuple[str, str]] = []
    if isinstance(observation, dict):
        for items in observation.values():
            for item in items or []:
                if isinstance(item, list | tuple) and len(item) >= 2 and item[0]:
                    ids = item[1] if isinstance(item[1], list) else [item[1]]
                    for dia_id in ids:
                        facts.append((str(dia_id), _one_line(item[0])))

    def order(fact: tuple[str, str]) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", fact[0])) or (0,)

    return [_Entry(turn=dia_id, text=text) for dia_id, text in sorted(facts, key=order)]


def write_conversation_store(
    conv: dict[str, Any], project_dir: Path, *, notes: bool = False
) -> Path:
    """Write ``conv`` as the memory store of a new project at ``project_dir``.

    Returns the store directory. ``project_dir`` gets a ``.git`` so it is
    its own memlane scope.
    """
    sample_id = str(conv["sample_id"])
    conversation = conv["conversation"]
    (project_dir / ".git").mkdir(parents=True, exist_ok=True)
    store = resolve_scope(project_dir).store
    store.mkdir(parents=True, exist_ok=True)
    sessions: list[_Session] = []
    for number in session_numbers(conversation):
        when = parse_locomo_time(conversation[f"session_{number}_date_time"])
        if notes:
            observation = (conv.get("observation") or {}).get(f"session_{number}_observation")
            entries = _note_entries(observation)
        else:
            entries = _turn_entries(conversation[f"session_{number}"])
        if entries:
            sessions.append(_Session(number, when, entries))
    by_day: dict[str, list[_Session]] = {}
    for session in sorted(sessions, key=lambda s: (s.when, s.number)):
        by_day.setdefault(session.when.date().isoformat(), []).append(session)
    for day, day_sessions in by_day.items():
        parts = [f"# {day}\n"]
        for session in day_sessions:
            hhmm = session.when.strftime("%H:%M")
            heading = f"## Session {hhmm}\n"
            for i, entry in enumerate(session.entries):
                anchor = Anchor(
                    session=f"{sample_id}-s{session.number}", turn=entry.turn, transcript="none"
                )
                body = format_entry(hhmm, anchor, entry.text)
                parts.append("\n" + (heading if i == 0 else "") + body)
        (store / f"{day}.md").write_text("".join(parts), encoding="utf-8")
    return store
