"""Damaged lines in a markdown file: found, kept out of the index, reported.

One damaged span must never cost a file its intact entries (ADR 0002). A
file is read as ``\\n``-separated lines, and a line is **damaged** when

* it is not valid UTF-8: a write cut off by a full disk in the middle of a
  multi-byte character (by an older memlane or another tool; memlane's own
  appends are all or nothing), a file saved in another encoding, a bad disk;
* it opens an HTML comment (``<!--`` at the start of the line) that is never
  closed within its section: an anchor line ``<!-- session:... -->`` cut
  short the same way. Memlane writes every anchor on one line, and a comment
  still open at the next heading would otherwise be indexed as text.

Reading keeps every other line exactly as written and leaves a damaged line
empty, so line numbers (chunks, ``expand``, ``forget``) keep their meaning
and the chunk hashes of intact sections are those of an undamaged file.

Setting damage aside (``memlane status --fix``, store/repair.py) moves the
damaged lines out of the file, together with the rest of any section that
would be left without text (the heading and anchor of a torn entry), and
nothing else: an entry with one damaged line keeps its intact ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memlane.core.errors import StoreError
from memlane.store import safe_paths
from memlane.store.markdown import has_meaningful_content, split_sections

# How much of a damaged line a report shows: enough to recognise it.
PREVIEW_CHARS = 60

_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"


@dataclass(frozen=True)
class DamagedLine:
    """One damaged line: where (``path:line``, 1-based), why, and how it starts."""

    path: str
    line: int
    reason: str
    preview: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, str | int]:
        return {
            "path": self.path,
            "line": self.line,
            "reason": self.reason,
            "preview": self.preview,
        }


@dataclass(frozen=True)
class CheckedText:
    """A file's text with its damaged lines emptied, and those lines."""

    text: str
    damaged: tuple[DamagedLine, ...]


def _preview(raw: bytes) -> str:
    shown = raw.rstrip(b"\r").decode("utf-8", errors="backslashreplace")
    return shown if len(shown) <= PREVIEW_CHARS else shown[: PREVIEW_CHARS - 1] + "…"


def _decode_lines(data: bytes, path: str) -> tuple[list[str], list[bytes], dict[int, DamagedLine]]:
    """Lines decoded one by one; an undecodable line becomes "" and is recorded."""
    raw_lines = data.split(b"\n")
    lines: list[str] = []
    damaged: dict[int, DamagedLine] = {}
    offset = 0
    for index, raw in enumerate(raw_lines):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            lines.append("")
            bad = offset + error.start
            damaged[index] = DamagedLine(
                path,
                index + 1,
                f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset {bad})",
                _preview(raw),
            )
        offset += len(raw) + 1
    return lines, raw_lines, damaged


def _unclosed_comment_lines(lines: Sequence[str]) -> list[int]:
    """Indexes of lines that open a comment never closed within their section."""
    found: list[int] = []
    for span in split_sections(list(lines)):
        open_line: int | None = None
        for index in range(span.start, span.end):
            line = lines[index]
            position = 0
            while True:
                if open_line is None:
                    start = line.find(_COMMENT_OPEN, position)
                    if start < 0:
                        break
                    open_line, position = index, start + len(_COMMENT_OPEN)
                else:
                    end = line.find(_COMMENT_CLOSE, position)
                    if end < 0:
                        break
                    open_line, position = None, end + len(_COMMENT_CLOSE)
        # Only a line that *starts* with the comment: "see <!-- this" in the
        # middle of a sentence is the user's text, not a torn anchor.
        if open_line is not None and lines[open_line].lstrip().startswith(_COMMENT_OPEN):
            found.append(open_line)
    return found


def _comments_close_on_their_line(text: str) -> bool:
    """True when every ``<!--`` is closed on its own line (then none is left open)."""
    position = 0
    while (start := text.find(_COMMENT_OPEN, position)) >= 0:
        end = text.find(_COMMENT_CLOSE, start + len(_COMMENT_OPEN))
        newline = text.find("\n", start)
        if end < 0 or 0 <= newline < end:
            return False
        position = end + len(_COMMENT_CLOSE)
    return True


def _check(data: bytes, path: str) -> tuple[list[str], list[bytes], dict[int, DamagedLine]]:
    lines, raw_lines, damaged = _decode_lines(data, path)
    for index in _unclosed_comment_lines(lines):
        damaged[index] = DamagedLine(
            path,
            index + 1,
            "an HTML comment (an anchor?) opens here and is never closed: "
            "a write that was cut short",
            _preview(raw_lines[index]),
        )
        lines[index] = ""
    return lines, raw_lines, damaged


def check_bytes(data: bytes, path: str | Path) -> CheckedText:
    """*data* (a whole file) as text, damaged lines emptied, and the damage found."""
    name = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        # The common case, a daily file whose anchors each close on their
        # line, costs a few substring searches per comment.
        if _comments_close_on_their_line(text) or not _unclosed_comment_lines(text.split("\n")):
            return CheckedText(text, ())
    lines, _, damaged = _check(data, name)
    ordered = tuple(damaged[index] for index in sorted(damaged))
    return CheckedText("\n".join(lines), ordered)


def lines_to_set_aside(data: bytes, path: str | Path = "") -> list[int]:
    """0-based indexes of the lines ``status --fix`` moves out of the file.

    The damaged lines, plus every other line of a section that holds a
    damaged line and keeps no text without it (e.g. the ``### HH:MM``
    heading and anchor of an entry whose only bullet was torn).
    """
    lines, _, damaged = _check(data, str(path))
    if not damaged:
        return []
    moving = set(damaged)
    for span in split_sections(lines):
        inside = [index for index in range(span.start, span.end) if index in damaged]
        if not inside or span.level == 0:
            continue
        kept = [lines[index] for index in range(span.start, span.end) if index not in damaged]
        if not has_meaningful_content("\n".join(kept).strip()):
            moving.update(range(span.start, span.end))
    # The empty string after a final "\n" is no line of the file.
    if data.endswith(b"\n"):
        moving.discard(len(lines) - 1)
    return sorted(moving)


#: What ``damage_in`` found in each file, under the file's identity as
#: ``lstat`` gives it (device, inode, mode, size, modification time): a
#: long-lived process (the web viewer, the engine) reports on every status
#: request, and a file whose identity did not change is not read again. A
#: file replaced, rewritten, appended to or turned into a link misses.
_found_by_file: dict[str, tuple[tuple[int, ...], tuple[DamagedLine, ...]]] = {}


def damage_in(store: Path, paths: Iterable[Path]) -> list[DamagedLine]:
    """The damaged lines of every file in *paths*, files of *store* read by
    the store's rules (an unreadable or refused file is skipped: the indexer
    reports it)."""
    found: list[DamagedLine] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        identity = (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)
        key = str(path)
        known = _found_by_file.get(key)
        if known is not None and known[0] == identity:
            found.extend(known[1])
            continue
        try:
            data = safe_paths.read_bytes(store, path, max_bytes=safe_paths.MARKDOWN_MAX_BYTES)
        except (StoreError, OSError):
            _found_by_file.pop(key, None)
            continue
        damaged = check_bytes(data, path).damaged
        _found_by_file[key] = (identity, damaged)
        found.extend(damaged)
    return found
