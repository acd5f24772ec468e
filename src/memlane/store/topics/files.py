"""Reading and writing one topic file or ``MEMORY.md``, with errors worded for the store.

A write lands through a temporary file in the same directory plus
``os.replace`` (``core/atomic``), so a reader never sees a half-written
file; a read never follows a link.
"""

from __future__ import annotations

import os
from pathlib import Path

from memlane.core import atomic
from memlane.core.errors import StoreError
from memlane.store import safe_paths


def write_atomic(
    path: Path, text: str, *, new_file_mode: int | None = None, durable: bool = True
) -> None:
    """Replace *path* with *text* in one rename (``core/atomic``); the file keeps
    its permissions, and errors are worded for the store.

    ``new_file_mode`` sets the permissions of a file that does not exist yet
    (a dream plan holds topic text: owner only); ``durable=False``: no fsync
    (``core/atomic``).
    """
    try:
        data = text.encode("utf-8")
    except UnicodeError:
        raise StoreError(
            f"cannot write {path}: the text is not valid UTF-8",
            "re-encode the input as UTF-8 and try again; nothing was changed",
        ) from None
    try:
        atomic.write_atomic(
            path, data, new_file_mode=new_file_mode, fault_prefix="topic", durable=durable
        )
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}",
            "check that the store directory is writable and the disk is not full",
        ) from None


def read_text_strict(path: Path) -> str:
    """A topic file or ``MEMORY.md`` as text ("" when missing); a link is refused.

    The directories on the way are the caller's to have checked
    (``topic_path``, ``memory_index_path``); the file itself is opened with
    ``O_NOFOLLOW``, so a link never puts another file's text in the store.
    """
    try:
        fd = safe_paths.open_nofollow(path, os.O_RDONLY)
        try:
            return safe_paths.read_fd(fd).decode("utf-8")
        finally:
            os.close(fd)
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise StoreError(
            f"cannot read {path}: it is not valid UTF-8",
            "re-save the file as UTF-8 (or move it out of the store); nothing was changed",
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read {path}: {exc.strerror or exc}",
            "check that your user can read it; nothing was changed",
        ) from None
