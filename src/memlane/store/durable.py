"""Durable writes: appends that happen whole or not at all, and renames and
new files that survive a power cut (fsync the directory too)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from memlane.core.atomic import fsync_directory
from memlane.core.diskspace import disk_full_error, filesystem_full, is_disk_full
from memlane.core.errors import StoreError
from memlane.core.faults import step
from memlane.core.locks import flocked
from memlane.store import safe_paths


def fsync_dirs(directories: Iterable[Path]) -> None:
    """fsync each directory, so the renames and creations in it are on disk.

    Best effort: not every filesystem lets a directory be opened or synced.
    """
    for directory in directories:
        fsync_directory(directory)


# How often an appender reopens a file that was replaced (a forget or a
# repair renamed a new copy over it) while it waited for the lock, before it
# writes anyway: a bound, not a number that matters.
_REOPEN_LIMIT = 100


def append_whole(
    path: Path, data: bytes, *, what: str = "the entry", store: Path | None = None
) -> None:
    """Append *data* to *path* in one write: all of it, or nothing at all.

    Entries from many processes go to the same daily file, each one
    ``O_APPEND`` write, so they never interleave. A write can still end
    short (the disk filled up mid-entry: half an anchor, half a multi-byte
    character). The bytes it did write are then cut off again with
    ``ftruncate`` to where the file ended before, so the file is exactly as
    it was and the caller gets a ``DiskFullError`` saying so.

    Cutting back is only safe if nobody appended after us meanwhile: every
    memlane appender therefore holds an exclusive ``flock`` on the file for
    its write and rollback (``core/locks.flocked``), so appenders queue for a
    few microseconds each. A writer outside memlane that takes no lock and
    lands behind a torn write makes the cut unsafe; then nothing is cut,
    the error says so, and the indexer and ``memlane status --fix`` deal
    with the torn bytes (store/damage.py).

    A file replaced while we waited for the lock (forget and repair write a
    new copy and rename it over the old one) is reopened, so the entry lands
    in the file that is there, not in the unlinked old copy.

    The file is never a link (``safe_paths.open_nofollow``: one swapped in
    for it is refused too); with *store*, no directory on the way from the
    store to it is a link either.
    """
    if store is not None:
        path = safe_paths.check_store_path(store, path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    for attempt in range(_REOPEN_LIMIT + 1):
        fd = safe_paths.open_nofollow(path, flags)
        try:
            with flocked(fd):
                if attempt < _REOPEN_LIMIT and not _still_at(fd, path):
                    continue
                step("append.locked")
                _write_or_roll_back(fd, data, path, what)
                step("append.written")
                return
        finally:
            os.close(fd)


def _still_at(fd: int, path: Path) -> bool:
    """Whether *fd* is still the file at *path* (not a copy renamed away)."""
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (current.st_dev, current.st_ino)


def _write_or_roll_back(fd: int, data: bytes, path: Path, what: str) -> None:
    """One write under the file's lock; a short or failed one is undone."""
    start = os.fstat(fd).st_size
    try:
        written = os.write(fd, data)
    except OSError as error:
        if not is_disk_full(error):
            raise
        # A failing write(2) wrote nothing; the file is as it was.
        raise disk_full_error(path, f"{what} was not written; the file is unchanged") from None
    if written == len(data):
        return
    # Asked before the cut, which frees the space again.
    full = filesystem_full(path)
    end = os.fstat(fd).st_size
    why = "another program wrote after them"
    if end == start + written:
        try:
            os.ftruncate(fd, start)
        except OSError as error:
            why = f"cutting them off failed: {error.strerror or error}"
        else:
            if full:
                raise disk_full_error(path, f"{what} was not written; the file is unchanged")
            raise StoreError(
                f"short write to {path} ({written} of {len(data)} bytes): "
                f"{what} was not written; the file is unchanged",
                "check the free space and the file size limit (`ulimit -f`), then try again",
            )
    # The torn bytes stay: the indexer leaves them out and status --fix sets them aside.
    raise StoreError(
        f"{path}: {what} was cut short after {written} of {len(data)} bytes, and those could "
        f"not be taken back ({why})",
        "free some space, then run `memlane status --fix` to set the torn lines aside",
    )
