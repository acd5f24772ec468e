"""Opening a file someone named: regular files only, never blocking, size capped.

memlane reads files whose names come from outside: a transcript path from an
anchor or a tool call, a markdown file given to ``memlane chunks``, the files
of a store a repository can commit (a committed symlink may point anywhere),
files brought in by ``memlane import``, the transcripts the sessions layer
ingests. A plain ``open()`` of a FIFO blocks until a writer appears, and a
read of ``/dev/zero`` or ``/dev/urandom`` never ends: either hangs the
process that serves every later request.

So every such open goes through here:

1. ``os.open`` with ``O_NONBLOCK`` (opening a FIFO then returns at once
   instead of waiting for a writer; a socket refuses with ENXIO);
2. ``fstat`` the descriptor (the very file opened, so nothing can be swapped
   in between a check and the open) and refuse anything that is not a regular
   file (FIFO, character or block device, socket) with a one-line error; a
   directory raises ``IsADirectoryError``, as ``open()`` would;
3. refuse a file larger than the caller's cap (``FileTooLargeError``), then
   clear ``O_NONBLOCK`` again (it means nothing to a regular file, but a
   descriptor should not carry a surprising flag);
4. read no further than the size seen at open (``open_regular_file``'s handle
   ends there): a file that keeps growing while it is read cannot keep the
   reader busy forever.

``OSError`` (not found, permission denied, a directory) passes through
unchanged, so callers keep their own messages for those.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import stat
from pathlib import Path
from typing import BinaryIO

from memlane.core.errors import StoreError

#: How much of a file a pread asks for at once in ``read_regular_file``.
_READ_BLOCK = 1 << 20


class NotRegularFileError(StoreError):
    """The path names a FIFO, device or socket: reading it could block forever."""


class FileTooLargeError(StoreError):
    """The file is larger than memlane reads of this kind of file."""


def describe_size(size: int) -> str:
    """``size`` bytes in the unit a person reads easily (``12 MiB``)."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    return f"{size} bytes"


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(path: Path, what: str, kind: str) -> NotRegularFileError:
    return NotRegularFileError(
        f"{what} {path} is {kind}, not a regular file; memlane reads only regular files",
        "pass the path of an ordinary file (reading a pipe or a device could block forever)",
    )


def _check_size(path: Path, what: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise FileTooLargeError(
            f"{what} {path} is {describe_size(size)}, more than memlane reads "
            f"({describe_size(max_bytes)})",
            "split the file or point memlane at a smaller one",
        )


def _open_fd(path: Path, what: str, max_bytes: int) -> tuple[int, int]:
    """(descriptor, size at open) of a regular file no larger than ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a Unix socket (or a FIFO opened for writing)
            raise _not_regular(path, what, "a socket") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, what, _kind_of(st.st_mode))
        _check_size(path, what, st.st_size, max_bytes)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


class _Bounded(io.RawIOBase):
    """A read-only, seekable view of the first ``limit`` bytes of ``fd``.

    Reads use ``pread`` at our own position, so the view never sees bytes
    appended after the open and ``fileno()`` still answers ``fstat``.
    """

    def __init__(self, fd: int, limit: int, name: str) -> None:
        super().__init__()
        self._fd = fd
        self._limit = limit
        self._pos = 0
        self.name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            target = offset
        elif whence == os.SEEK_CUR:
            target = self._pos + offset
        elif whence == os.SEEK_END:
            target = self._limit + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        self._pos = target
        return target

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._limit - self._pos)
        if wanted <= 0:
            return 0
        data = os.pread(self._fd, wanted, self._pos)
        view = memoryview(buffer).cast("B")
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        super().close()


def open_regular_file(path: Path, *, max_bytes: int, what: str = "file") -> BinaryIO:
    """A buffered binary handle on the regular file ``path``, ending at its size at open.

    Raises ``NotRegularFileError`` for a FIFO, device or socket,
    ``FileTooLargeError`` above ``max_bytes``, and ``OSError`` as ``open()``
    would (``IsADirectoryError`` for a directory). ``what`` names the file in
    messages ("transcript", "memory file").
    """
    fd, size = _open_fd(path, what, max_bytes)
    raw = _Bounded(fd, size, str(path))
    return io.BufferedReader(raw, buffer_size=1 << 16)


def read_regular_file(path: Path, *, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` as they were at open (same errors)."""
    fd, size = _open_fd(path, what, max_bytes)
    try:
        return _read_upto(fd, size)
    finally:
        os.close(fd)


def read_fd_bounded(fd: int, path: Path, *, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of an open regular file, refused above ``max_bytes``, up to its
    size now (for callers that opened it under their own rules)."""
    size = os.fstat(fd).st_size
    _check_size(path, what, size, max_bytes)
    return _read_upto(fd, size)


def _read_upto(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    offset = 0
    while offset < size:
        data = os.pread(fd, min(_READ_BLOCK, size - offset), offset)
        if not data:
            break  # truncated while we read: what is there is all there is
        parts.append(data)
        offset += len(data)
    return b"".join(parts)


def read_all_from(fd: int, offset: int = 0) -> bytes:
    """Everything in the open file *fd* from *offset* to its end now (pread: the
    descriptor's own position is left alone)."""
    parts: list[bytes] = []
    while True:
        piece = os.pread(fd, _READ_BLOCK, offset)
        if not piece:
            return b"".join(parts)
        parts.append(piece)
        offset += len(piece)


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` (after symlinks) is a regular file; never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
