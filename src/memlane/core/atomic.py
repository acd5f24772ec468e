"""Replace a file with new bytes in one rename: readers see the old file or the
new one, never a torn write, and the new one survives a power cut.

The temporary file gets a name no other writer can pick,
``.<name>.<pid>.<8 hex>.tmp`` in the target's directory (a rename is atomic
only within one filesystem), so two processes replacing the same file at
once never write into each other's temp file; the last rename wins whole.
``temp_writer`` reads that name back; ``store/leftovers.py`` and the index's
vector file sweep temp files whose writer is gone with it.

Errors are ``OSError``, raised through once the temp file is removed: each
caller words its own one-line message.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path

from memlane.core.faults import step

# Created private, then given its final mode before any byte is written.
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")


def temp_path_for(path: Path) -> Path:
    """A fresh ``.<name>.<pid>.<8 hex>.tmp`` name beside *path*."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def temp_writer(file_name: str) -> tuple[str, int] | None:
    """(the target's name, the writer's process id) of a file named by
    ``temp_path_for``; None for any other name."""
    found = _TEMP_NAME.match(file_name)
    return None if found is None else (found["name"], int(found["pid"]))


def write_atomic(
    path: Path,
    data: bytes | str | Sequence[memoryview],
    *,
    mode: int | None = None,
    new_file_mode: int | None = None,
    fault_prefix: str | None = None,
    durable: bool = True,
) -> None:
    """Replace *path* with *data* (``str`` is written as UTF-8) atomically.

    Permissions: *mode* when given; else the existing file's (a file the user
    made private stays private); else *new_file_mode*; else the usual
    ``0o666`` less the umask. *fault_prefix* names the fault steps
    ``<prefix>.temp_written`` (before the rename) and ``<prefix>.renamed``
    (after it) that the fault suite kills at. ``durable=False`` skips the
    fsyncs (each can take milliseconds on a busy disk) for a record that is
    cheap to lose in a crash of the machine: readers still see the old file
    or the new one, never half of one. A sequence of buffers is written one
    after the other, so a large file is never copied into one ``bytes``.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    parts = [memoryview(payload)] if isinstance(payload, bytes) else payload
    final_mode = mode if mode is not None else _existing_mode(path, new_file_mode)
    temp = temp_path_for(path)
    fd = os.open(temp, _TEMP_FLAGS, 0o600 if final_mode is not None else 0o666)
    try:
        try:
            if final_mode is not None:
                os.fchmod(fd, final_mode)
            for part in parts:
                _write_all(fd, part)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if fault_prefix is not None:
            step(f"{fault_prefix}.temp_written")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if fault_prefix is not None:
        step(f"{fault_prefix}.renamed")
    if durable:
        fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """fsync *directory*, so a rename in it is on disk (best effort: not every
    filesystem lets a directory be opened or synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _existing_mode(path: Path, new_file_mode: int | None) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return new_file_mode


def _write_all(fd: int, data: memoryview) -> None:
    view = data.cast("B")
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:])
