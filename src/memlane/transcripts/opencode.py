"""OpenCode sessions (``opencode-ai`` 1.18): read from its SQLite store, kept as JSONL.

OpenCode 1.18 keeps every session in one SQLite database,
``$XDG_DATA_HOME/opencode/opencode.db`` (``~/.local/share/opencode``;
``OPENCODE_DB`` names another), not in files:

- ``session`` (``id`` ``ses_…``, ``directory``, ``title``, ``parent_id``,
  ``time_created`` in epoch ms);
- ``message`` (``id`` ``msg_…``, ``session_id``, ``time_created``, ``data``: JSON
  ``{"role": "user"|"assistant", "time": {"created", "completed"?}, "error"?, ...}``);
- ``part`` (``id`` ``prt_…``, ``message_id``, ``data``: JSON ``{"type": "text",
  "text", "synthetic"?, "ignored"?}``, ``{"type": "tool", "tool", "callID",
  "state": {"status", "input", "output"?, "error"?}}``, ``{"type": "file",
  "filename"?}``, and parts that are not conversation: ``step-start``,
  ``step-finish``, ``reasoning``, ``snapshot``, ``patch``...).

memlane's transcript layers (L3's index of entry offsets, the sessions
layer's reading of appended bytes) read append-only JSONL, so the engine
keeps, per OpenCode session, a JSONL copy of its settled messages
(``sync``, at each turn's end: docs/adr/0037-opencode-host.md). Its lines are
pi's entry shapes, one chain (OpenCode sessions do not branch in place), so
pi's readers index them; the header names OpenCode and its session:

    {"type": "session", "agent": "opencode", "version": 3, "id": <ses id>, "cwd",
     "timestamp", "opencode": {"db", "title"}, "parentSession"?: <parent ses id>}
    {"type": "message", "id": <msg id>, "parentId", "timestamp",
     "message": {"role": "user"|"assistant", "content": [text / toolCall blocks]}}
    {"type": "message", "id": <prt id>, ..., "message": {"role": "toolResult",
     "toolName", "isError", "content": [text]}}
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.transcripts import message as m
from memlane.transcripts import pi

AGENT = "opencode"
#: How long a read waits for OpenCode's writer to let go of the database.
BUSY_TIMEOUT_S = 2.0


def is_header(obj: dict[str, Any]) -> bool:
    """The first line of an OpenCode session's JSONL copy."""
    return pi.is_header(obj) and obj.get("agent") == AGENT


def message(obj: dict[str, Any]) -> m.Message | m.Skip:
    """One line of the copy as conversation (pi's shapes)."""
    return pi.message(obj)


@dataclass(frozen=True)
class StoredMessage:
    """One OpenCode message and its parts, as its database holds them."""

    id: str
    created: int  # epoch ms
    info: dict[str, Any]
    parts: tuple[dict[str, Any], ...]

    @property
    def role(self) -> str:
        return str(self.info.get("role") or "")

    @property
    def settled(self) -> bool:
        """A user message, or an assistant message that finished (or failed)."""
        if self.role == "user":
            return True
        times = self.info.get("time")
        done = isinstance(times, dict) and times.get("completed") is not None
        return done or self.info.get("error") is not None

    def text(self) -> str:
        """The text the user or the model wrote (no synthetic or ignored parts)."""
        return text_of_parts(self.parts)

    def tools(self) -> list[str]:
        return [str(p.get("tool")) for p in self.parts if p.get("type") == "tool"]

    @property
    def aborted(self) -> bool:
        error = self.info.get("error")
        return isinstance(error, dict) and error.get("name") == "MessageAbortedError"


@dataclass(frozen=True)
class StoredSession:
    id: str
    directory: str
    title: str
    parent_id: str | None
    created: int
    messages: tuple[StoredMessage, ...]


def text_of_parts(parts: Iterable[dict[str, Any]]) -> str:
    texts = []
    for part in parts:
        if part.get("type") != "text" or part.get("synthetic") or part.get("ignored"):
            continue
        text = part.get("text")
        if isinstance(text, str) and text:
            texts.append(text)
    return "\n".join(texts)


def _json_object(raw: object) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def connect(db: str | Path) -> sqlite3.Connection:
    """A read-only connection to OpenCode's database (sqlite3.Error when it cannot open)."""
    uri = Path(db).absolute().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)


def read_session(db: str | Path, session_id: str) -> StoredSession | None:
    """The session *session_id* with its messages in order; None when the database
    does not hold it. sqlite3.Error when the database cannot be read."""
    with _closing(connect(db)) as conn:
        row = conn.execute(
            "SELECT id, directory, title, parent_id, time_created FROM session WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        parts: dict[str, list[dict[str, Any]]] = {}
        for part_id, message_id, data in conn.execute(
            "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id",
            (session_id,),
        ):
            # The id is a column, not in the part's JSON.
            parts.setdefault(message_id, []).append({**_json_object(data), "id": part_id})
        messages = tuple(
            StoredMessage(mid, int(created), _json_object(data), tuple(parts.get(mid, ())))
            for mid, created, data in conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? "
                "ORDER BY time_created, id",
                (session_id,),
            )
        )
    return StoredSession(str(row[0]), str(row[1]), str(row[2]), row[3], int(row[4]), messages)


class _closing:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def iso(ms: object) -> str | None:
    """Epoch milliseconds as an ISO timestamp (UTC), as pi's entries carry them."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def header(session: StoredSession, db: str | Path) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "session",
        "agent": AGENT,
        "version": 3,
        "id": session.id,
        "timestamp": iso(session.created),
        "cwd": session.directory,
        "opencode": {"db": str(db), "title": session.title},
    }
    if session.parent_id:
        line["parentSession"] = session.parent_id
    return line


def entries(stored: StoredMessage, parent: str | None) -> list[dict[str, Any]]:
    """The lines of one settled message: the message, then its tools' results."""
    stamp = iso(stored.created)
    content: list[dict[str, Any]] = []
    text = stored.text()
    if text:
        content.append({"type": "text", "text": text})
    for part in stored.parts:
        if part.get("type") == "file":
            content.append({"type": "text", "text": f"[file {part.get('filename') or '?'}]"})
    if stored.role == "assistant":
        for part in stored.parts:
            if part.get("type") == "tool":
                state = part.get("state")
                args = state.get("input") if isinstance(state, dict) else None
                content.append(
                    {
                        "type": "toolCall",
                        "id": part.get("callID"),
                        "name": part.get("tool"),
                        "arguments": args if isinstance(args, dict) else {},
                    }
                )
    lines = [
        {
            "type": "message",
            "id": stored.id,
            "parentId": parent,
            "timestamp": stamp,
            "message": {"role": stored.role or "unknown", "content": content},
        }
    ]
    previous = stored.id
    for part in stored.parts:
        if stored.role != "assistant" or part.get("type") != "tool":
            continue
        part_id = part.get("id")
        state = part.get("state")
        if not isinstance(part_id, str) or not isinstance(state, dict):
            continue
        output = state.get("output") if state.get("status") != "error" else state.get("error")
        result: dict[str, Any] = {
            "role": "toolResult",
            "toolName": part.get("tool"),
            "isError": state.get("status") == "error",
            "content": [{"type": "text", "text": str(output or "")}],
        }
        lines.append(
            {
                "type": "message",
                "id": part_id,
                "parentId": previous,
                "timestamp": stamp,
                "message": result,
            }
        )
        previous = part_id
    return lines


def _written(path: Path) -> tuple[set[str], str | None, bool]:
    """(ids in the copy, the last one, whether it has a header)."""
    ids: set[str] = set()
    last: str | None = None
    has_header = False
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                if obj.get("type") == "session":
                    has_header = True
                elif isinstance(obj.get("id"), str):
                    ids.add(obj["id"])
                    last = obj["id"]
    except FileNotFoundError:
        pass
    return ids, last, has_header


def new_lines(
    session: StoredSession, db: str | Path, ids: set[str], last: str | None, has_header: bool
) -> Iterator[dict[str, Any]]:
    """The lines the copy lacks: settled messages after the last written, in order,
    up to the first message still being written."""
    if not has_header:
        yield header(session, db)
    for stored in session.messages:
        if stored.id in ids:
            continue
        if not stored.settled:
            return
        for line in entries(stored, last):
            last = line["id"]
            yield line


def sync(db: str | Path, session_id: str, path: str | Path) -> StoredSession | None:
    """Append to the JSONL copy at *path* the settled messages it lacks; the session
    as read (None when the database does not hold it)."""
    session = read_session(db, session_id)
    if session is None:
        return None
    target = Path(path)
    ids, last, has_header = _written(target)
    lines = list(new_lines(session, db, ids, last, has_header))
    if lines:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        if not target.exists():
            write_atomic(target, text, new_file_mode=0o600)
        else:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(text)
    return session


@dataclass(frozen=True)
class LastTurn:
    """The last settled exchange of a session: its prompt and everything answered after."""

    user_id: str
    user: str
    assistant: str
    last_id: str  # the last assistant message: the anchor
    tools: tuple[str, ...]
    aborted: bool


def last_turn(session: StoredSession) -> LastTurn | None:
    """The session's last prompt and its answer; None while it is unanswered or unsettled."""
    messages = session.messages
    start = max((i for i, s in enumerate(messages) if s.role == "user"), default=None)
    if start is None:
        return None
    answers = [s for s in messages[start + 1 :] if s.role == "assistant"]
    if not answers or not all(s.settled for s in answers):
        return None
    prompt = messages[start]
    return LastTurn(
        user_id=prompt.id,
        user=prompt.text(),
        assistant="\n\n".join(t for s in answers if (t := s.text())),
        last_id=answers[-1].id,
        tools=tuple(t for s in answers for t in s.tools()),
        aborted=any(s.aborted for s in answers),
    )
