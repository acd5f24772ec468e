"""Opening store files without ever following a symbolic link out of the store.

A repository can commit anything under ``.memsearch/memory/``, including
links: ``2026-12-01.md -> ~/.bashrc`` would make the next ``memlane write``
append to the user's shell profile, and a linked ``MEMORY.md`` would put any
file's text into the system prompt. So every read and write of a store file
goes through this module, which refuses:

* a store directory whose own path goes through a link memlane was not told
  to follow (``check_store_root``). A link the user configured is fine:
  ``core/scope.py`` resolves ``MEMSEARCH_DIR`` and a store command's answer
  to real paths, so only the parts it adds itself (``.memsearch``,
  ``memory``) can still be links, and those come from the repository;
* any link inside the store: the file itself (opened with ``O_NOFOLLOW``,
  so a link swapped in after the check fails too) and every directory
  between the store and the file (``topics -> /etc``);
* a path outside the store, and anything that is not a regular file (a FIFO
  would block the reader forever).

Each refusal is an ``UnsafePathError`` (a ``StoreError``): one line naming
the path, and the hint to remove the link. A link whose target lies inside
the store is refused too: it would make one file count twice, and telling
the two cases apart is a check that can be raced; the target is a store
file in its own right and is read and indexed under its own name.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from memlane.core.errors import StoreError
from memlane.core.regular_file import read_all_from, read_fd_bounded

LINK_HINT = (
    "memlane never follows a link in the memory store (a repository could commit one "
    "to make it read or write any file); remove the link"
)
ROOT_HINT = (
    "a repository could commit such a link to send memory elsewhere, so memlane does "
    "not follow it; remove the link, or, to keep memory there on purpose, set "
    "MEMSEARCH_DIR (or MEMLANE_STORE_CMD) to that place"
)


class UnsafePathError(StoreError):
    """A store path that is a link, goes through one, or is not a regular file."""


# The largest markdown file memlane reads (store files, ``memlane chunks``).
# A daily file grows by a few KiB per entry; 128 MiB is tens of thousands of
# days of heavy use, and a bound against a store file that is a link to
# /dev/zero or to a huge unrelated file.
MARKDOWN_MAX_BYTES = 128 << 20


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))


def link_target(link: Path) -> str:
    """Where *link* points, as written in the link ("?" when it cannot be read)."""
    try:
        return os.readlink(link)
    except OSError:
        return "?"


def link_error(path: Path) -> UnsafePathError:
    """The refusal of *path*, a symbolic link inside the store."""
    return UnsafePathError(f"{path} is a symbolic link (to {link_target(path)})", LINK_HINT)


def _first_link(absolute: str) -> str | None:
    """The first component of *absolute* that is a symbolic link, if any.

    One ``lstat`` per component on plain strings: this runs on every store
    read and write, so it is kept to a few microseconds.
    """
    current = ""
    for part in absolute.split(os.sep)[1:]:
        if not part:
            continue
        current = f"{current}{os.sep}{part}"
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return None  # nothing exists from here on, so nothing here is a link
        if stat.S_ISLNK(mode):
            return current
    return None


def first_link(path: Path) -> Path | None:
    """The first component of *path* (made absolute) that is a symbolic link, if any."""
    found = _first_link(str(_absolute(path)))
    return Path(found) if found is not None else None


def check_store_root(store: Path) -> Path:
    """*store* as an absolute path, refused when its path goes through a link.

    ``core/scope.py`` hands out store paths that are real up to where the
    user configured them, so a link here was put in by something else (a
    repository's committed ``.memsearch``, say).
    """
    absolute = _absolute(store)
    link = _first_link(str(absolute))
    if link is not None:
        raise _root_error(absolute, Path(link))
    return absolute


def _root_error(root: Path, link: Path) -> UnsafePathError:
    return UnsafePathError(
        f"the memory store {root} goes through a symbolic link: {link} -> {link_target(link)}",
        ROOT_HINT,
    )


def store_root_problem(store: Path) -> str | None:
    """``check_store_root``'s refusal as one line, or None when the store is usable."""
    try:
        check_store_root(store)
    except UnsafePathError as exc:
        return str(exc)
    return None


def check_store_path(store: Path, path: Path) -> Path:
    """*path* (absolute) when it lies in *store* with no link on the way; else refused.

    Every component is checked, from the filesystem root through the store
    to the file itself (a file that does not exist yet passes).
    """
    root = _absolute(store)
    candidate = _absolute(path)
    root_text, text = str(root), str(candidate)
    if not text.startswith(root_text.rstrip(os.sep) + os.sep):
        check_store_root(root)
        raise UnsafePathError(
            f"{path} is outside the memory store {root}",
            "memlane only reads and writes files inside its store",
        )
    link = _first_link(text)
    if link is not None:
        if len(link) <= len(root_text):
            raise _root_error(root, Path(link))
        raise link_error(Path(link))
    return candidate


def open_store_file(store: Path, path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` of a store file that is never a link and always a regular file.

    ``O_NOFOLLOW`` makes the kernel refuse a link even if one replaced the
    file after the check; ``O_NONBLOCK`` keeps a FIFO from blocking the
    open (it has no effect on a regular file). Other ``OSError``s (missing
    file, permissions, full disk) pass through for the caller to word.
    """
    return open_nofollow(check_store_path(store, path), flags, mode)


def _not_regular(path: Path) -> UnsafePathError:
    return UnsafePathError(
        f"{path} is not a regular file",
        "memory files are plain text files; remove or rename it",
    )


def read_bytes(store: Path, path: Path, *, max_bytes: int | None = None) -> bytes:
    """The whole content of a store file (``open_store_file``'s rules).

    With *max_bytes*, a larger file is refused (``FileTooLargeError``) and
    reading stops at the size the file had when it was opened.
    """
    fd = open_store_file(store, path, os.O_RDONLY)
    try:
        if max_bytes is None:
            return read_fd(fd)
        return read_fd_bounded(fd, path, max_bytes=max_bytes, what="memory file")
    finally:
        os.close(fd)


def read_text(store: Path, path: Path) -> str:
    """A store file decoded as strict UTF-8, line endings untouched.

    ``UnicodeDecodeError`` and ``OSError`` pass through for the caller to word.
    """
    return read_bytes(store, path).decode("utf-8")


def open_nofollow(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` refusing a link as the last component of *path* and a non-regular file.

    For callers that checked the directories on the way already (the topic
    files, whose directory ``topics_dir`` checks) and only hold the path.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and os.path.islink(path)):
            raise link_error(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
            raise _not_regular(path) from None
        raise
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _not_regular(path)
    return fd


def read_fd(fd: int) -> bytes:
    """Everything in the open store file *fd*, from its start."""
    return read_all_from(fd)
