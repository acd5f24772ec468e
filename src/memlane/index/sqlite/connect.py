"""Opening a read-write connection to an index file: WAL, memlane's
PRAGMAs, and the ``connection_hook`` seam.

Seam: ``connection_hook(hook)`` runs ``hook(connection)`` on every
connection these files open while it is active: to set extra PRAGMAs
(``secure_delete=OFF`` as many SQLite builds default to) or to make opening
fail (raise ``sqlite3.OperationalError``), e.g. in tests.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

# Page cache per connection (KiB, as SQLite's negative cache_size): holds the
# hot FTS doclists of a 100k-chunk collection.
CACHE_SIZE_KIB = 32 * 1024

ConnectionHook = Callable[[sqlite3.Connection], None]
# Hooks of active ``connection_hook`` blocks, run in order on every new connection.
_connection_hooks: list[ConnectionHook] = []
_hooks_lock = threading.Lock()


@contextlib.contextmanager
def connection_hook(hook: ConnectionHook) -> Iterator[None]:
    """Run ``hook(connection)`` on every connection opened while the block runs.

    A documented seam, process-wide (every thread, every ``SqliteFile``):
    the hook runs after memlane's own PRAGMAs and before the schema is
    read, so it can change a connection's settings (``PRAGMA
    secure_delete=OFF``, as many SQLite builds default to) or make the open
    fail by raising (``sqlite3.OperationalError`` reads as a failing disk or
    a refused open). Meant for tests and diagnostics; nothing in memlane
    installs one.
    """
    with _hooks_lock:
        _connection_hooks.append(hook)
    try:
        yield
    finally:
        with _hooks_lock:
            _connection_hooks.remove(hook)


def connect(path: Path, wait_s: float) -> sqlite3.Connection:
    """A connection to *path*, busy-waiting ``wait_s``, before any PRAGMA."""
    return sqlite3.connect(
        str(path),
        timeout=wait_s,
        isolation_level=None,  # we issue BEGIN/COMMIT ourselves
        check_same_thread=False,
    )


def configure(conn: sqlite3.Connection) -> None:
    """WAL and memlane's PRAGMAs, then the active hooks (``connection_hook``)."""
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA cache_size=-{CACHE_SIZE_KIB}")
    conn.execute("PRAGMA temp_store=MEMORY")
    with _hooks_lock:
        hooks = list(_connection_hooks)
    for hook in hooks:
        hook(conn)
