"""Advisory ``flock`` locks: the one helper memlane's locks are built on.

``flock`` locks belong to an open file description: closing the descriptor
releases them, another descriptor of the same file (even in this process)
does not share them, and a process killed with SIGKILL loses them at once,
so a crash can never leave a lock held.

Two shapes:

* ``flocked(fd)`` locks a file memlane already has open, e.g. a daily file
  while an entry is appended to it (every memlane appender takes it, so one
  appender's rollback can never cut another's bytes: store/durable.py);
* ``lock_file(path)`` opens (creating) a lock file that holds no data and
  locks it, e.g. ``<index>.lock`` around an index rebuild.

Both wait as long as it takes, except ``lock_file(..., bounded=True)``
inside a read's wait budget (core/waits.py), which gives up with
``LockWaitedOut``. ``lock_holders`` and ``describe_holders`` name who
holds a lock, for the notice that says what could not be read.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from memlane.core.waits import lock_fd_bounded


def lock_fd(fd: int, *, exclusive: bool = True, wait: bool = True) -> None:
    """Take ``flock`` on *fd* until it is closed (or unlocked).

    For a lock held longer than a block — a session's capture log, held
    for the session's life — or a probe (``wait=False``: raises
    ``BlockingIOError``, an ``OSError``, when another descriptor holds it).
    """
    operation = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    fcntl.flock(fd, operation if wait else operation | fcntl.LOCK_NB)


@contextlib.contextmanager
def flocked(fd: int, *, exclusive: bool = True) -> Iterator[None]:
    """Hold ``flock`` on the open descriptor *fd* for the block (waits for it)."""
    lock_fd(fd, exclusive=exclusive)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def lock_file(
    path: Path, *, exclusive: bool, mode: int = 0o644, bounded: bool = False
) -> Iterator[int]:
    """Open (creating) the lock file *path* and hold ``flock`` on it; yields the fd.

    The lock file is never written to and never removed: unlinking a lock
    file lets two processes lock two different inodes. ``bounded``: inside
    a wait budget (core/waits.py) give up with ``LockWaitedOut`` when it
    stays held; for reads only.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        if bounded:
            lock_fd_bounded(fd, exclusive=exclusive)
        else:
            lock_fd(fd, exclusive=exclusive)
        yield fd
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# -- who holds a lock ------------------------------------------------------------------

PROC_LOCKS = "/proc/locks"


def lock_holders(path: Path, *, byte: int | None = None, exclusive: bool = False) -> list[int]:
    """The pids holding a ``flock`` or POSIX lock on *path* (Linux's ``/proc/locks``).

    ``byte``: only POSIX locks covering that offset (SQLite's WAL write lock
    is byte 120 of the ``-shm`` file); ``exclusive``: only exclusive (write)
    locks. Empty when nobody holds one, or when this system does not say
    (no ``/proc/locks``, the file gone).
    """
    try:
        info = os.stat(path)
        with open(PROC_LOCKS, encoding="ascii", errors="replace") as listing:
            lines = listing.read().splitlines()
    except OSError:
        return []
    wanted = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    pids: list[int] = []
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->":  # "->": a waiter, not a holder
            continue
        kind, mode, pid_text, where = fields[1], fields[3], fields[4], fields[5]
        try:
            major, minor, inode = where.split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            pid = int(pid_text)
        except ValueError:
            continue
        if key != wanted or pid <= 0 or (exclusive and mode != "WRITE"):
            continue
        if byte is not None and (kind != "POSIX" or not _covers(fields[6], fields[7], byte)):
            continue
        if pid not in pids:
            pids.append(pid)
    return pids


def _covers(start: str, end: str, byte: int) -> bool:
    try:
        low = int(start)
        return low <= byte and (end == "EOF" or byte <= int(end))
    except ValueError:
        return False


def describe_holders(pids: list[int]) -> str:
    """``pid 4242 (python3)``, ``this process``, or ``another process`` when unknown.

    Only the executable's short name (``/proc/<pid>/comm``): a command
    line may carry secrets.
    """
    if not pids:
        return "another process"
    shown = []
    for pid in pids[:3]:
        if pid == os.getpid():
            shown.append(f"this process (pid {pid})")
            continue
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as comm:
                name = comm.read().strip()
        except OSError:
            name = ""
        shown.append(f"pid {pid} ({name})" if name else f"pid {pid}")
    more = f" and {len(pids) - 3} more" if len(pids) > 3 else ""
    return ", ".join(shown) + more
