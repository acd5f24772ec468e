"""The engine's side of the OpenCode plugin (integrations/opencode/): what differs from pi.

The plugin speaks the sidecar protocol (hosts/server/rpc.py) through
``memlane sidecar``, as pi does, with ``host: "opencode"``. Two things differ:

- OpenCode answers no ``llm.complete`` (its model is reached through its own
  sessions only), so an OpenCode session gets no host model: ``capture.model``
  or ``llm.provider`` when the user set one, else verbatim digests;
- OpenCode keeps its messages in SQLite: at the end of each turn the plugin
  sends ``opencode.turn_end {db}``, and the engine copies the session's new
  messages into its JSONL copy (the session's transcript: anchors, L3 and the
  sessions layer read it) and captures the turn from what OpenCode stored,
  not from what the plugin saw (docs/adr/0037-opencode-host.md).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError

if TYPE_CHECKING:
    from memlane.engine.live.session import Session

log = logging.getLogger("memlane.opencode")

HOST = "opencode"
TURN_END = "opencode.turn_end"

_lock = threading.Lock()
_captured: dict[str, set[str]] = {}  # session id → anchors of turns queued here


def transcript_path(cwd: str | Path, session_id: str, given: str | None) -> str:
    """The session's transcript: the JSONL copy the engine keeps of it."""
    from memlane.transcripts.locate import opencode_copy_dir

    if given:
        return given
    name = "".join(c if c.isalnum() or c in "_-" else "-" for c in session_id)
    return str(opencode_copy_dir(str(Path(cwd).absolute())) / f"{name}.jsonl")


def turn_end(session: Session, params: dict[str, Any]) -> dict[str, Any]:
    """Copy the session's new messages, then capture its last turn (once)."""
    from memlane.core.types import Exchange
    from memlane.transcripts import opencode

    db = params.get("db")
    if not isinstance(db, str) or not db:
        raise MemlaneError(f"{TURN_END}: params.db must name OpenCode's database")
    if session.transcript_path is None:
        raise MemlaneError(f"{TURN_END}: the session has no transcript path")
    try:
        stored = opencode.sync(db, session.session_id, session.transcript_path)
    except (sqlite3.Error, OSError) as exc:
        raise MemlaneError(
            f"OpenCode's database {db} could not be read ({exc})",
            "check that the file exists and this user may read it",
        ) from exc
    if stored is None:
        return {"queued": False, "reason": "OpenCode's database does not hold this session"}
    turn = opencode.last_turn(stored)
    if turn is None:
        return {"queued": False, "reason": "no settled exchange yet"}
    with _lock:
        if turn.last_id in _captured.get(session.session_id, ()):
            return {"queued": False, "reason": "this turn was captured already"}
    exchange = Exchange(
        user=turn.user,
        assistant=turn.assistant,
        aborted=turn.aborted,
        entry_id=turn.last_id,
        session_id=session.session_id,
        transcript_path=session.transcript_path,
        tools=turn.tools,
    )
    queued = session.agent_settled(exchange)
    if queued.queued:
        with _lock:
            _captured.setdefault(session.session_id, set()).add(turn.last_id)
    result: dict[str, Any] = queued.to_json()
    log.info("turn %s of %s: %s", turn.last_id, session.session_id[:12], result)
    return result


def forget(session_id: str) -> None:
    with _lock:
        _captured.pop(session_id, None)
