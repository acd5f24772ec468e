"""Recognising a damaged index file and moving it aside.

The index is derived data (markdown is the source of truth), so the answer
to corruption is never a repair attempt: the damaged file is renamed to
``<name>.corrupt-<UTC timestamp>``, a fresh empty index takes its place, and
the engine re-indexes from markdown. Once the fresh file is open the damaged
one is deleted (``discard_moved_aside``): nothing is salvaged from it that
the markdown (or, for the sessions index, the transcripts) does not hold,
and a copy kept "for a bug report" would keep every entry it held,
including entries ``forget`` later removes (ADR 0011). A copy left behind
anyway (a process killed between the rename and the delete, or an older
memlane) goes at the next open of that index and at every ``forget``
(``remove_damaged_copies``).

Two processes may detect the same damage at once. The move-aside runs under
an exclusive ``flock`` on ``<path>.lock`` and only moves the file if it is
still the very file (device + inode) the caller found damaged, so the loser
of the race reopens the winner's fresh index instead of moving it aside too.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from memlane.core.clock import SYSTEM_CLOCK
from memlane.core.diskspace import filesystem_full
from memlane.core.locks import lock_file

# SQLite primary result codes (the low byte of the extended code).
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_NOTADB = 26
SQLITE_READONLY_DBMOVED = 8 | (4 << 8)  # extended code: the file was moved

# Messages that mean "this file is not the index we wrote", whatever code
# the sqlite3 module attached (older builds attach none).
_CORRUPT_MESSAGES = (
    "malformed",
    "file is not a database",
    "no such table",
    "no such index",
    "vtable constructor failed",
)

FileId = tuple[int, int]  # (st_dev, st_ino)


def corruption_reason(exc: sqlite3.DatabaseError) -> str | None:
    """A one-line reason when ``exc`` means the file is damaged, else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    message = str(exc)
    if isinstance(code, int) and (code & 0xFF) in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return message
    if any(marker in message.lower() for marker in _CORRUPT_MESSAGES):
        return message
    return None


def is_busy(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in (SQLITE_BUSY, SQLITE_LOCKED):
        return True
    return "database is locked" in str(exc).lower()


def is_full(exc: sqlite3.DatabaseError, path: Path) -> bool:
    """Whether ``exc`` means the disk holding the database at *path* is full.

    SQLITE_FULL says so; an I/O error (the WAL index cannot grow on a full
    tmpfs: SQLITE_IOERR_SHMSIZE, "disk I/O error") counts when the
    filesystem has no room left.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    message = str(exc).lower()
    if primary == SQLITE_FULL or "database or disk is full" in message:
        return True
    io_error = primary == SQLITE_IOERR or "disk i/o error" in message
    return io_error and filesystem_full(path)


def file_id(path: Path) -> FileId | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def lock_path_of(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def file_lock(path: Path, *, exclusive: bool, bounded: bool = False) -> Iterator[None]:
    """``flock`` on ``<path>.lock``: shared for opening, exclusive for rebuilds.

    ``bounded``: inside a read's wait budget, ``LockWaitedOut`` when a
    rebuild keeps it (core/waits.py).
    """
    lock = lock_path_of(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock_file(lock, exclusive=exclusive, bounded=bounded):
        yield


def move_aside(path: Path, expected: FileId | None) -> Path | None:
    """Rename a damaged index out of the way; caller holds the exclusive lock.

    Returns where it went, or None when the file at ``path`` is no longer the
    one found damaged (another process already rebuilt it) or is gone.
    The -wal file goes along (it belongs to the damaged database and would be
    replayed onto the fresh one otherwise); the -shm file is only a cache of
    the -wal index and is deleted.
    """
    current = file_id(path)
    if current is None or (expected is not None and current != expected):
        return None
    stamp = SYSTEM_CLOCK.utc().strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, target)
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        os.replace(wal, target.with_name(target.name + "-wal"))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path.with_name(path.name + "-shm"))
    return target


#: What follows ``<index name>`` in the name of a moved-aside damaged copy.
MOVED_ASIDE_MARK = ".corrupt-"
# The files SQLite keeps beside a database, moved or deleted with it.
_SIDE_FILES = ("-wal", "-shm", "-journal")


def discard_moved_aside(target: Path) -> None:
    """Delete a moved-aside damaged index and the files beside it."""
    for name in (target.name, *(target.name + suffix for suffix in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target.with_name(name))


def remove_damaged_copies(path: Path) -> list[Path]:
    """Delete every moved-aside copy of the index at ``path``; what was removed.

    Safe while another process rebuilds: it deletes its own copy a moment
    later and never reads it. A directory that cannot be listed or written
    (read-only) leaves the copies where they are and returns what went.
    """
    prefix = path.name + MOVED_ASIDE_MARK
    removed: list[Path] = []
    try:
        entries = [entry.name for entry in os.scandir(path.parent)]
    except OSError:
        return removed
    for name in sorted(entries):
        if not name.startswith(prefix):
            continue
        copy = path.with_name(name)
        try:
            os.unlink(copy)
        except FileNotFoundError:
            continue
        except OSError:
            continue  # read-only or not ours: status reports the directory
        removed.append(copy)
    return removed
