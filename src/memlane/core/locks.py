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
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def lock_fd(fd: int, *, exclusive: bool = True, wait: bool = True) -> None:
    """Take ``flock`` on *fd* until it is closed (or unlocked).

    For a lock held longer than a block — a session's capture journal, held
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
def lock_file(path: Path, *, exclusive: bool, mode: int = 0o644) -> Iterator[int]:
    """Open (creating) the lock file *path* and hold ``flock`` on it; yields the fd.

    The lock file is never written to and never removed: unlinking a lock
    file lets two processes lock two different inodes.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        lock_fd(fd, exclusive=exclusive)
        yield fd
    finally:
        os.close(fd)  # closing the descriptor releases the lock
