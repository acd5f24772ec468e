"""The coding-memory quality set: load it, and write it as a memlane store.

The set (``coding_memory.json``) is a coding agent's distilled memory of one
project: sessions of six short, standalone entries on unrelated topics;
questions that paraphrase one entry each; unrelated queries the store does
not answer.

The store is written the way capture writes it: every entry
goes through ``redact_for_storage`` and ``DailyWriter.append``, memlane's
own writer, with a pi-style anchor (session UUID, 8-hex turn id, transcript
path), so the daily files, ``## Session HH:MM`` headings and ``### HH:MM``
entries are byte for byte what a captured session leaves. Turn ids are
derived from the entry ids but opaque, so no word of an id reaches the
index; a search hit maps back to its entry through its anchor's ``turn:``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlane.core.scope import resolve_scope
from memlane.core.types import Anchor
from memlane.store.daily import DailyWriter
from memlane.store.redaction import redact_for_storage

DATA = Path(__file__).resolve().parent / "coding_memory.json"
# Minutes after the session's start at which its entries are captured: an
# exchange every few minutes, unevenly, like a working session.
ENTRY_OFFSETS_MIN = (0, 7, 19, 26, 41, 53)
_LATER_ENTRY_GAP_MIN = 12
_UUID_NAMESPACE = uuid.UUID("6f1d5c3e-9a47-4b1e-8f0a-3c2d7e5b9a10")


@dataclass(frozen=True)
class Entry:
    id: str
    text: str
    session: str  # the set's session id (s01 ...)


@dataclass(frozen=True)
class Session:
    id: str
    start: datetime  # local time of the first entry (UTC-aware)
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    category: str
    gold: str | None  # an entry id; None for an unrelated query
    # The changed-facts set (changed_memory.json): a "changed" question's gold
    # replaced this older entry; a "history" question's gold was replaced by this one.
    superseded: str | None = None
    newer: str | None = None


@dataclass(frozen=True)
class CodingSet:
    project: str
    cwd: str
    sessions: tuple[Session, ...]
    questions: tuple[Query, ...]
    unrelated: tuple[Query, ...]

    @property
    def entries(self) -> list[Entry]:
        return [entry for session in self.sessions for entry in session.entries]


def load_set(path: Path = DATA) -> CodingSet:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    sessions = tuple(
        Session(
            id=s["id"],
            start=datetime.fromisoformat(s["start"]).replace(tzinfo=UTC),
            entries=tuple(Entry(e["id"], e["text"], s["id"]) for e in s["entries"]),
        )
        for s in raw["sessions"]
    )
    questions = tuple(
        Query(q["id"], q["text"], q["category"], q["gold"], q.get("superseded"), q.get("newer"))
        for q in raw["questions"]
    )
    unrelated = tuple(Query(u["id"], u["text"], u["category"], None) for u in raw["unrelated"])
    return CodingSet(raw["project"], raw["cwd"], sessions, questions, unrelated)


def turn_id(entry_id: str) -> str:
    """The entry's anchor turn: 8 hex digits, like a pi entry id."""
    return hashlib.sha256(f"coding-memory:{entry_id}".encode()).hexdigest()[:8]


def session_uuid(session_id: str) -> str:
    return str(uuid.uuid5(_UUID_NAMESPACE, session_id))


def transcript_path(data: CodingSet, session: Session) -> str:
    """Where pi would have kept the session's transcript."""
    slug = "--" + data.cwd.strip("/").replace("/", "-") + "--"
    stamp = session.start.strftime("%Y-%m-%dT%H-%M-%S")
    return f"/home/dev/.pi/agent/sessions/{slug}/{stamp}_{session_uuid(session.id)}.jsonl"


def entry_time(session: Session, index: int) -> datetime:
    if index < len(ENTRY_OFFSETS_MIN):
        minutes = ENTRY_OFFSETS_MIN[index]
    else:
        extra = index - len(ENTRY_OFFSETS_MIN) + 1
        minutes = ENTRY_OFFSETS_MIN[-1] + extra * _LATER_ENTRY_GAP_MIN
    return session.start + timedelta(minutes=minutes)


def write_coding_store(
    data: CodingSet, project_dir: Path, env: Mapping[str, str] | None = None
) -> Path:
    """Write every session of ``data`` as the store of a new project at ``project_dir``.

    Returns the store directory. ``project_dir`` gets a ``.git`` so it is
    its own memlane scope. Sessions are written in time order, each by its
    own writer, as separate agent processes would. ``env`` is the
    environment the store is resolved in (the process's by default): pass
    the one the CLI will run in.
    """
    (project_dir / ".git").mkdir(parents=True, exist_ok=True)
    store = resolve_scope(project_dir, env=env).store
    store.mkdir(parents=True, exist_ok=True)
    for session in sorted(data.sessions, key=lambda s: s.start):
        writer = DailyWriter()
        anchor_session = session_uuid(session.id)
        transcript = transcript_path(data, session)
        for index, entry in enumerate(session.entries):
            anchor = Anchor(session=anchor_session, turn=turn_id(entry.id), transcript=transcript)
            writer.append(
                store,
                redact_for_storage(entry.text),
                anchor,
                entry_time(session, index),
                anchor_session,
            )
    return store
