"""Whether a Claude Code turn was captured already: a second Stop for it writes nothing.

Claude Code may report the same turn twice (a Stop hook fired again, a
retried hook, an engine restarted between the two). A turn counts as
captured when this engine queued it, when a capture log of the project
holds it still pending (a killed engine's, which the next session start
writes), or when its anchor is in a daily file. The files are searched only
for a session this engine opened and has queued no turn of yet: a turn an
earlier engine saw can only be the one before this engine's first.

Every Stop of a project runs on that project's worker thread, so the check
and ``queued`` (called once ``agent_settled`` returned) do not race.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlane.engine.live.session import Session

#: A turn's entry is written at the moment it was acknowledged: daily files
#: from the day before today on are searched for its anchor.
LOOKBACK = timedelta(days=1)

_lock = threading.Lock()
_queued: dict[str, set[str]] = {}  # session id → turns this engine queued
_unsearched: set[str] = set()  # sessions opened here, their files not yet ruled out


def already_captured(session: Session, key: str, ids: Collection[str]) -> bool:
    """True when the turn *key* (its prompt's uuid) of *session* is captured or on
    its way, an earlier Stop's anchor being one of *ids*."""
    from memlane.engine.journal import capture_log as cl
    from memlane.engine.journal.capture_recovery import anchor_written

    with _lock:
        if key in _queued.get(session.session_id, ()):
            return True
        if session.session_id not in _unsearched:
            return False
    memory = session.memory
    since = memory.clock.now() - LOOKBACK
    if anchor_written(memory.scope.store, session.session_id, ids, since):
        return True
    directory = cl.capture_log_dir(memory.scope)
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if not name.endswith(cl.LOG_SUFFIX) or name.startswith("."):
            continue
        try:
            contents = cl.parse((directory / name).read_bytes())
        except OSError:
            continue
        for item in contents.pending.values():
            if item.anchor.session == session.session_id and item.anchor.turn in ids:
                return True
    return False


def opened(session_id: str) -> None:
    """This engine opened *session_id*: an earlier engine may have captured its last turn."""
    with _lock:
        _unsearched.add(session_id)


def queued(session_id: str, key: str) -> None:
    """The turn *key* of *session_id* was queued for capture (``agent_settled`` returned)."""
    with _lock:
        _queued.setdefault(session_id, set()).add(key)
        _unsearched.discard(session_id)


def forget_session(session_id: str) -> None:
    with _lock:
        _queued.pop(session_id, None)
        _unsearched.discard(session_id)
