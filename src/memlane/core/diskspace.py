"""Recognising a full disk and saying so in one line.

A full disk shows up in three guises: ``ENOSPC`` / ``EDQUOT`` from a write,
a *short* write (the kernel wrote what fitted and returned the count), and
SQLite's "database or disk is full" or, when the WAL index cannot grow,
"disk I/O error". Whatever the guise, the user is told the same thing: which
file, what the failure did, and to free some space.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memlane.core.errors import DiskFullError

# "No space left on device" and "Disk quota exceeded": to the user, both mean
# that the disk is full for them.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

# Below this many free bytes a filesystem counts as full: a write of a page
# or two (an entry, an index page) cannot be sure to fit.
FULL_BELOW_BYTES = 16 * 1024


def is_disk_full(error: BaseException) -> bool:
    """Whether *error* is an ``OSError`` meaning the disk or the quota is full."""
    return isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS


def filesystem_full(path: Path | str) -> bool:
    """Whether the filesystem holding *path* (or its nearest existing parent)
    has less than ``FULL_BELOW_BYTES`` left for this user. False when it
    cannot tell."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        info = os.statvfs(probe)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < FULL_BELOW_BYTES


def disk_full_error(path: Path | str, consequence: str) -> DiskFullError:
    """The one-line "disk is full" error for *path*: what happened, what to do.

    *consequence* says what the failure did (or did not do), e.g. "the entry
    was not written".
    """
    where = Path(path).parent
    return DiskFullError(
        f"the disk holding {path} is full: {consequence}",
        f"free some space on it (`df -h {where}` shows how much is left) and try again",
    )
