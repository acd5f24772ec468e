"""Making a rename or a new file survive a power cut: fsync the directory too."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path


def fsync_dirs(directories: Iterable[Path]) -> None:
    """fsync each directory, so the renames and creations in it are on disk.

    Best effort: not every filesystem lets a directory be opened or synced.
    """
    for directory in directories:
        with contextlib.suppress(OSError):
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
