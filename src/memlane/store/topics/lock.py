"""The topics lock: one exclusive ``flock`` on ``<store>/.topics.lock`` over
every topic and index rewrite, so two processes adding at once never lose an
entry or an index line.

Taking it settles what a killed writer left: a dream intents file (an apply
killed midway), its temporary files (store/leftovers.py, once their writer
is gone) and the pending-index marker (``pending``).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memlane.core.errors import StoreError
from memlane.core.faults import step
from memlane.core.locks import describe_holders, flocked, lock_holders
from memlane.core.waits import LockWaitedOut, lock_fd_bounded
from memlane.store import dream_intents, safe_paths
from memlane.store.layout import TOPICS_DIR
from memlane.store.leftovers import sweep_writer_temps
from memlane.store.topics.pending import settle_index_lines

log = logging.getLogger("memlane.dream")

LOCK_NAME = ".topics.lock"

# The locks this thread holds, by (device, inode) of the lock file: a reader
# that finds a dream intents file must not wait for a lock its own thread holds
# (flock locks are per open file, so that wait would never end).
_held = threading.local()


def _held_keys() -> set[tuple[int, int]]:
    keys: set[tuple[int, int]] | None = getattr(_held, "keys", None)
    if keys is None:
        keys = _held.keys = set()
    return keys


def holds_lock(store: Path) -> bool:
    """Whether this thread is inside ``locked(store)``."""
    try:
        info = os.stat(store / LOCK_NAME)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in _held_keys()


@contextmanager
def locked(store: Path, *, recover: bool = True, bounded: bool = False) -> Iterator[None]:
    """Exclusive lock over every topic and index rewrite of *store*.

    A dream intents file found on taking the lock is an apply that was killed
    midway: it is settled (``dream_intents.recover``) before the caller sees
    any file, so nobody reads or writes on top of half a dream. The check is
    one ``exists()``. *recover* False is for ``engine/dream``, which recovers
    itself to report what it did. *bounded*: for a reader inside a read's
    wait budget (core/waits.py), a ``StoreError`` naming the holder when the
    lock stays held; writers wait their turn.
    """
    try:
        safe_paths.check_store_root(store)
        store.mkdir(parents=True, exist_ok=True)
        # Never a link (safe_paths): the lock file is opened read-write.
        fd = safe_paths.open_store_file(store, store / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise StoreError(
            f"cannot lock the topic files in {store}: {exc.strerror or exc}",
            "check that the store directory is writable",
        ) from None
    try:
        if bounded:
            _lock_bounded(store, fd)
        with flocked(fd):  # at once when bounded: this descriptor holds it already
            step("topic.locked")
            info = os.fstat(fd)
            key = (info.st_dev, info.st_ino)
            _held_keys().add(key)
            try:
                if recover and dream_intents.intents_path(store).exists():
                    message = dream_intents.recover(store).render()
                    if message:
                        log.warning("%s: %s", store, message)
                sweep_writer_temps([store, store / TOPICS_DIR], _filesystem_now(fd))
                settle_index_lines(store)
                yield
            finally:
                _held_keys().discard(key)
    finally:
        os.close(fd)


def _lock_bounded(store: Path, fd: int) -> None:
    try:
        lock_fd_bounded(fd)
    except LockWaitedOut as exc:
        who = describe_holders(lock_holders(store / LOCK_NAME, exclusive=True))
        raise StoreError(
            f"the topic files of {store} are being rewritten by {who} (a dream or a topic "
            f"edit holds their lock; waited {exc.spent_s:.1f} s)",
            "retry in a moment",
        ) from None


def _filesystem_now(fd: int) -> float | None:
    """Now, as the filesystem stamps files: the age of a leftover temporary file
    is measured on the clock that dated it (a network share's may differ).

    A change of mode (to the same mode) makes the kernel stamp the lock
    file's ctime with its own clock; unlike ``utime``, nothing in user space
    chooses that time (a time-shifting library rewrites utime's "now")."""
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode))
        return os.fstat(fd).st_ctime
    except OSError:
        return None


def settle_interrupted_dream(store: Path) -> None:
    """For readers that take no lock: when a dream intents file is there, take the
    lock once, which settles it (or waits for a dream being applied right now)."""
    if dream_intents.intents_path(store).exists() and not holds_lock(store):
        with locked(store, bounded=True):  # a reader: bounded inside a read's budget
            pass
