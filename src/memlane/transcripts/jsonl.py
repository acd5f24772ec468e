"""Line-level I/O on a transcript file: open with clear errors, scan once,
re-read single entries by byte offset."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from memlane.core.errors import NotFoundError, StoreError
from memlane.core.regular_file import open_regular_file
from memlane.core.untrusted import excerpt, path_problem

# Sniffing the format reads at most this many leading lines; a Claude Code
# file can open with metadata lines (summaries, snapshots) before any entry.
SNIFF_LINES = 50
# The largest transcript L3 reads. The reader keeps offsets, not lines, so
# memory stays small, but it scans the whole file to follow the entry tree:
# real long pi and Claude Code sessions reach 100-300 MB (pasted logs,
# base64 screenshots), so 1 GiB leaves them room and still bounds a scan to
# a few seconds. A larger file is refused with its size.
TRANSCRIPT_MAX_BYTES = 1 << 30


def open_transcript_file(path: Path) -> BinaryIO:
    """*path* opened the safe way (a regular file only, never blocking, at most
    ``TRANSCRIPT_MAX_BYTES``), its errors left to the caller: a scan over many
    transcripts skips the ones it cannot read."""
    return open_regular_file(path, max_bytes=TRANSCRIPT_MAX_BYTES, what="transcript")


def check_transcript_path(path: str | Path) -> None:
    """Refuse, in one line, a transcript path no file can have.

    A path arrives as a tool argument or an anchor's text: with a NUL byte
    in it, Python raises ``ValueError`` from deep in the first system call,
    which would surface as an internal error. A path with other control
    characters is left to the file system: a project directory may really
    be named so, and its transcripts with it.
    """
    text = os.fspath(path)
    problem = path_problem(text, control_characters=True)
    if problem is not None:
        raise NotFoundError(
            f"no transcript can be at the path given: it {problem}: {excerpt(text)}",
            "pass the transcript: path exactly as memory_expand shows it",
        )


def open_transcript(path: Path) -> IO[bytes]:
    """Open *path* for binary reading, or raise an error that names it.

    Only a regular file of at most ``TRANSCRIPT_MAX_BYTES`` is opened, never
    blocking (core/regular_file.py): a FIFO or a device named as a transcript
    would otherwise hang the engine and every request after it. The handle
    ends at the file's size at open, so a session appending meanwhile does
    not keep the reader going.
    """
    check_transcript_path(path)
    shown = str(path)
    try:
        handle = open_regular_file(path, max_bytes=TRANSCRIPT_MAX_BYTES, what="transcript")
    except FileNotFoundError:
        raise NotFoundError(
            f"transcript not found: {shown}",
            "the session file may have been moved or deleted, or the anchor comes from "
            "another machine",
        ) from None
    except IsADirectoryError:
        raise StoreError(
            f"transcript path is a directory: {shown}",
            "pass the session's .jsonl file, as the anchor's transcript: field names it",
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read transcript {shown}: {exc.strerror or exc}",
            "check the file's permissions",
        ) from exc
    try:
        empty = os.fstat(handle.fileno()).st_size == 0
    except OSError:
        empty = False
    if empty:
        handle.close()
        raise StoreError(
            f"transcript is empty: {shown}",
            "the session wrote nothing yet; try again once it has a turn",
        )
    return handle


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The JSON object on *line*, or None for garbage (counted by the caller)."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def scan(handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for every non-blank line, in file order."""
    handle.seek(0)
    offset = 0
    for line in handle:
        start = offset
        offset += len(line)
        if line.strip():
            yield start, line


def read_at(handle: IO[bytes], offset: int) -> dict[str, Any] | None:
    handle.seek(offset)
    return parse_line(handle.readline())


#: The end of a transcript a turn is first looked for in; doubled until found.
TAIL_BYTES = 256 * 1024


def tails(path: Path) -> Iterator[bytes]:
    """The end of the transcript at *path*, longer each time: the last
    ``TAIL_BYTES``, then twice as much, …, up to the whole file (or
    ``TRANSCRIPT_MAX_BYTES``), each from its first whole line. A host's last
    turn is near the end, so the file is read back only as far as it needs."""
    with open_transcript(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        tail = TAIL_BYTES
        while True:
            start = max(0, size - tail)
            handle.seek(start)
            data = handle.read(size - start)
            if start > 0:
                data = data[data.find(b"\n") + 1 :]  # the first line may be cut
            yield data
            if start == 0 or tail >= TRANSCRIPT_MAX_BYTES:
                return
            tail *= 2
