"""``memlane status --fix``: move damaged lines out of a store file.

What moves is ``damage.lines_to_set_aside``: the damaged lines and the
headings they leave without text; every intact line stays, byte for byte.
The moved lines are **appended** to ``<file>.damaged`` beside the file (never
overwritten, never indexed: not a markdown name), under a header line that
says where they came from and when.

Steps, for one file, with the fault steps a kill can hit:

1. take the store's rewrite lock (``.forget.lock``, which serialises every
   rewrite of a daily file; ``.topics.lock`` for a topic file) and then an
   exclusive ``flock`` on the file itself, which every memlane appender
   takes for its write (store/durable.append_whole), so no entry lands
   while the file is rewritten (``repair.locked``);
2. read it and decide what moves; append those lines to ``<file>.damaged``
   and fsync it (``repair.damaged_written``);
3. write the rest to a private temp file in the same directory, fsync it
   (``repair.temp_written``), rename it over the file and fsync the
   directory (``repair.renamed``).

A kill before step 3's rename leaves the file as it was (a second run
appends the same lines to ``.damaged`` again: duplicated there, never lost);
a kill after it leaves the repaired file. An appender that waited for the
lock on the old file finds after the rename that the path names a new file,
and appends to that one instead (durable.append_whole).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memlane.core.atomic import write_atomic
from memlane.core.clock import utc_z
from memlane.core.diskspace import disk_full_error, is_disk_full
from memlane.core.errors import StoreError
from memlane.core.faults import step
from memlane.core.locks import flocked, lock_file
from memlane.store import topics
from memlane.store.damage import check_bytes, lines_to_set_aside
from memlane.store.durable import append_whole
from memlane.store.forget import LOCK_NAME as REWRITE_LOCK_NAME
from memlane.store.layout import TOPICS_DIR

DAMAGED_SUFFIX = ".damaged"


@dataclass(frozen=True)
class SetAside:
    """Lines moved out of one file: which (1-based, as numbered before) and where to."""

    path: str
    damaged_path: str
    lines: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "damaged_path": self.damaged_path, "lines": list(self.lines)}


def damaged_path_of(path: Path) -> Path:
    """``<file>.damaged``: where a file's damaged lines are set aside."""
    return path.with_name(path.name + DAMAGED_SUFFIX)


def set_aside_damage(store: Path, paths: Iterable[Path], now: datetime) -> list[SetAside]:
    """Set the damaged lines of each file in *paths* aside; files without damage are
    left untouched (not even locked)."""
    done: list[SetAside] = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if not check_bytes(data, path).damaged:
            continue
        moved = set_aside_file(store, path, now)
        if moved is not None:
            done.append(moved)
    return done


def set_aside_file(store: Path, path: Path, now: datetime) -> SetAside | None:
    """Move *path*'s damaged lines into ``<file>.damaged`` (module docstring).

    None when, read under the locks, the file has nothing damaged any more.
    """
    try:
        with _rewrite_lock(store, path):
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                with flocked(fd):
                    step("repair.locked")
                    return _rewrite(path, fd, now)
            finally:
                os.close(fd)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full_error(path, "nothing was moved; the file is unchanged") from None
        raise StoreError(
            f"cannot set aside the damaged lines of {path}: {error.strerror or error}",
            "check that the store directory is writable; nothing was moved",
        ) from None


@contextlib.contextmanager
def _rewrite_lock(store: Path, path: Path) -> Iterator[None]:
    root = store.expanduser().resolve()
    if path.resolve().is_relative_to(root / TOPICS_DIR):
        with topics.locked(root):
            yield
    else:
        with lock_file(root / REWRITE_LOCK_NAME, exclusive=True):
            yield


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while piece := os.pread(fd, 1 << 20, offset):
        chunks.append(piece)
        offset += len(piece)
    return b"".join(chunks)


def _rewrite(path: Path, fd: int, now: datetime) -> SetAside | None:
    data = _read_all(fd)
    moving = set(lines_to_set_aside(data, path))
    if not moving:
        return None
    raw_lines = data.split(b"\n")
    terminated = [raw + b"\n" for raw in raw_lines[:-1]] + [raw_lines[-1]]
    kept = b"".join(line for i, line in enumerate(terminated) if i not in moving)
    moved = [
        terminated[i] if terminated[i].endswith(b"\n") else terminated[i] + b"\n"
        for i in sorted(moving)
    ]
    numbers = tuple(i + 1 for i in sorted(moving))

    target = damaged_path_of(path)
    header = (
        f"# {len(numbers)} line(s) set aside from {path.name} by `memlane status --fix` "
        f"at {utc_z(now)}: {', '.join(map(str, numbers))}\n"
    ).encode()
    append_whole(target, header + b"".join(moved), what="the damaged lines")
    _fsync_path(target)
    step("repair.damaged_written")

    # The mode of the file under the lock (fd), not of whatever the name holds.
    mode = os.fstat(fd).st_mode & 0o7777
    write_atomic(path, kept, mode=mode, fault_prefix="repair")
    return SetAside(str(path), str(target), numbers)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
