"""The project's session store, one per process, and its damage notice."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.engine.lock_waits import bounded_read
from memlane.engine.sessions.docs import redact_text
from memlane.index.sqlite.sessions import SessionStore, sessions_path_for

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.index.session_docs import SessionInfo


_stores: dict[Path, SessionStore] = {}
_stores_lock = threading.Lock()


def sessions_path(mem: ProjectMemory) -> Path:
    return sessions_path_for(mem.internals.index_path)


def sessions_stamp(mem: ProjectMemory) -> tuple[int, ...]:
    """The size and modification time of the sessions index and its WAL: a
    commit by any process changes it, so what was read from the index under
    the same stamp is still current (a cache key for the viewer's pages)."""
    path = sessions_path(mem)
    stamp: list[int] = []
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            st = part.stat()
        except OSError:
            stamp += [-1, -1]
        else:
            stamp += [st.st_size, st.st_mtime_ns]
    return tuple(stamp)


def open_store(mem: ProjectMemory) -> SessionStore:
    """The project's session store, one per process (its vector matrix stays warm)."""
    path = sessions_path(mem)
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = SessionStore(
                path, mem.internals.index_settings, mem.config.sessions, redact=redact_text
            )
            _stores[path] = store
        return store


@bounded_read  # a sessions index another process keeps locked costs the primer, briefly
def recent_for_primer(mem: ProjectMemory, n: int, exclude: str | None) -> list[SessionInfo]:
    """The latest sessions of the project, for a session's primer (the snapshot)."""
    return open_store(mem).recent_sessions(n, exclude)


def damage_notice(store: SessionStore, *, pop: bool) -> str | None:
    """The line telling the user the store was recreated after damage, or None.

    ``pop`` clears it (shown once per process): search, similar, status and
    stats pop it; ingestion only adds it to its report, since `sessions
    search` catches up first and shows the search's notices, not the report's.
    """
    reason = store.pop_rebuilt_reason() if pop else store.rebuilt_reason
    if reason is None:
        return None
    head = f"the sessions index was damaged and rebuilt: {reason}"
    if store.reread_since_rebuild:
        return f"{head}; its messages were read again from the transcripts"
    # Every source's offset went with the file, so the next backfill (or
    # sweep) re-reads every transcript without being told to.
    return f"{head}; run `memlane sessions backfill` to re-read the transcripts"


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()
