"""Who holds an index file's locks, and the errors that say so.

A read that gave up waiting (core/waits.py) says which lock stopped it and,
where the system tells (Linux's ``/proc/locks``), which process holds it:

* SQLite's WAL write lock: byte 120 of the ``-shm`` file, held by a writer
  for the length of its transaction;
* ``<index>.lock``: held exclusively while a damaged file is moved aside
  and recreated (recovery.py), shared while a process opens the file;
* the index object's thread lock: another thread of this process is in the
  middle of an operation on it (often itself waiting for the write lock).
"""

from __future__ import annotations

from pathlib import Path

from memlane.core.locks import describe_holders, lock_holders
from memlane.index.protocol import IndexBusyError
from memlane.index.sqlite.recovery import lock_path_of

#: SQLite's WAL write lock: this byte of the ``-shm`` file (``WAL_WRITE_LOCK``).
WAL_WRITE_LOCK_BYTE = 120


def write_lock_holders(path: Path) -> list[int]:
    """Who holds the WAL write lock of the database at *path* (pids; empty: unknown)."""
    return lock_holders(path.with_name(path.name + "-shm"), byte=WAL_WRITE_LOCK_BYTE)


def write_lock_holder(path: Path) -> str:
    """``pid 4242 (python3)``, or ``another process`` when the system does not say."""
    return describe_holders(write_lock_holders(path))


def rebuild_lock_error(label: str, path: Path, waited_s: float) -> IndexBusyError:
    """The file could not be opened: a rebuild holds ``<path>.lock``."""
    who = describe_holders(lock_holders(lock_path_of(path), exclusive=True))
    return IndexBusyError(
        f"{label} {path} could not be opened: {who} holds its rebuild lock "
        f"(waited {waited_s:.1f} s)",
        hint="it is being rebuilt; retry in a moment",
    )


def thread_busy_error(label: str, path: Path, waited_s: float) -> IndexBusyError:
    """Another thread of this process kept the index object past the wait budget."""
    holders = write_lock_holders(path)
    waiting = f" (its write lock is held by {describe_holders(holders)})" if holders else ""
    return IndexBusyError(
        f"{label} {path} is busy in this process: another of its threads is using "
        f"it{waiting} (waited {waited_s:.1f} s)",
        hint="retry in a moment",
    )
