"""Redaction: remove exactly one entry or one ``## Memory Compact`` block.

What is removed
---------------
* An **entry** is a ``### HH:MM`` section: the heading, its anchor comment
  and bullets, up to the next heading of level 1 to 3.
* A **compact block** is a ``## Memory Compact HH:MM`` heading and
  everything after it up to the next ``#`` or ``##`` heading, sub-headings
  included: a chunk anywhere inside it removes the whole block. One
  departure from "up to the next ``##``": a ``### HH:MM`` entry heading also
  ends the block, because a session that keeps writing after a compaction
  appends its entries without a new ``## Session`` heading, and those must
  never be swallowed (compact summaries never contain such a heading:
  engine/maintenance.py rewrites one).

An entry is addressed by a chunk (its source file and first line, plus its
chunk hash, which is checked against the file as it is now, under the lock,
so a stale index can never point the removal at another entry) or by
``(date, time)``: the ``### HH:MM`` (or ``## Memory Compact HH:MM``)
heading in ``<store>/<date>.md``. Several headings with that time are
refused, never guessed between; nothing is ever matched fuzzily.

Headings are left alone: a ``## Session HH:MM`` heading whose only entry
was removed stays (memsearch parity, and it still records that the session
wrote here). When the removed entry was the last thing in the file, the
blank line that separated it from the text above goes with it, so the next
append does not leave a double blank line.

Concurrency
-----------
Daily files are appended to by other processes with one ``O_APPEND`` write
per entry and no lock (store/daily.py), so a removal cannot just rewrite
the file. Under an exclusive ``flock`` on ``<store>/.forget.lock`` (which
serialises removals; the lock file is never written to, so it never holds
memory text, and it is left in place because unlinking a lock file lets two
processes lock different inodes):

1. read the file and locate the entry (byte range ``[start, end)``);
2. write everything else to a private temp file in the same directory
   and ``fsync`` it;
3. re-read the file; if it grew, the growth is appends (the old bytes must
   be an unchanged prefix, else the removal is refused and nothing
   changes), so the same range is removed from the longer content, the
   temp file rewritten, and step 3 repeated until the file stops growing;
4. ``os.replace`` the temp file over the daily file, ``fsync`` the
   directory;
5. salvage: an appender that opened the old file before step 4 writes to
   the old inode after it. A descriptor on the old inode is kept open, so
   any bytes that reach it after the last read are appended to the new
   file (one ``O_APPEND`` write), checked again until the old inode has
   been quiet for ``SALVAGE_QUIET_S``.

The remaining window, honestly: an appender that opened the old file before
the replace and then stalled for longer than ``SALVAGE_QUIET_S`` before its
write (a stopped or heavily descheduled process) writes into the unlinked
old inode after the salvage stopped looking; that entry is lost. A salvaged
entry may also land after entries written to the new file in the meantime,
so entries can be out of time order by that much. Anything that rewrites
the file other than by appending (an editor) during a removal makes the
removal fail without changing anything.

No copy of the removed text is written anywhere: the temp file holds only
the text that stays, and is removed on every path (renamed over the daily
file, or unlinked on error); the lock file stays empty. The returned
``Removed.markdown`` is the only record.

``RewriteHooks`` are the fault hooks of steps 2 to 4, for tests that widen
the race with appenders or fail the rename; memlane itself never passes any.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memlane.core.errors import NotFoundError, StoreError
from memlane.core.locks import flocked
from memlane.store.chunker import chunk_markdown
from memlane.store.damage import check_bytes
from memlane.store.durable import append_whole, fsync_dirs
from memlane.store.markdown import heading_of

LOCK_NAME = ".forget.lock"
#: The salvage (step 5) stops after the old inode has not grown for this long.
SALVAGE_QUIET_S = 0.05
#: Step 3 gives up when the file keeps growing for this many rounds.
MAX_ROUNDS = 1000

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_DAILY_NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
_ENTRY_TITLE_RE = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$")
_COMPACT_TITLE_RE = re.compile(r"^Memory Compact\b")

Kind = Literal["entry", "compact"]


@dataclass(frozen=True)
class RewriteHooks:
    """The fault hooks of a removal's rewrite (steps 2 to 4 above).

    ``temp_written()`` runs after each (fsynced) write of the temp file,
    before the daily file is read again: a test slows the rewrite there so
    appends keep landing mid-removal. ``replace(temp, daily_file)`` is step
    4's rename: a test fails it (a full disk) or appends to the old inode
    around it (a late appender). The defaults are the real steps.
    """

    temp_written: Callable[[], None] = field(default=lambda: None)  # nothing, by default
    replace: Callable[[str, Path], None] = os.replace


@dataclass(frozen=True)
class Removed:
    """What a redaction took out of a daily file, verbatim.

    ``start_line``/``end_line`` are the heading's line and the block's last
    line (its trailing blank line included), numbered as before the
    removal. ``markdown`` is exactly the bytes removed, so it starts with a
    blank line when the entry was the last thing in the file (that
    separator went with it). ``notices`` come from the engine (index
    problems after the removal).
    """

    source: str
    start_line: int  # 1-based, inclusive, as numbered before the removal
    end_line: int
    markdown: str
    kind: Kind
    notices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "markdown": self.markdown,
            "kind": self.kind,
            "notices": list(self.notices),
        }


@dataclass(frozen=True)
class _Span:
    """A located entry: lines ``[first, last]`` (0-based) and byte range."""

    first: int
    last: int
    start: int  # byte offsets into the file's content
    end: int
    kind: Kind


# -- locating --------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    # Lines as the chunker numbers them: split on b"\n" only, each keeping
    # its terminator so offsets add up to the file's bytes.
    parts = data.split(b"\n")
    out = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(
            f"{path} is not valid UTF-8", "re-save the file as UTF-8 before removing from it"
        ) from None


def _heading(line: bytes) -> tuple[int, str] | None:
    text = line.rstrip(b"\n").decode("utf-8", errors="replace")
    return heading_of(text.removesuffix("\r"))


def _is_entry_heading(found: tuple[int, str] | None) -> bool:
    return found is not None and found[0] == 3 and _ENTRY_TITLE_RE.match(found[1]) is not None


def _is_compact_heading(found: tuple[int, str] | None) -> bool:
    return found is not None and found[0] == 2 and _COMPACT_TITLE_RE.match(found[1]) is not None


def _compact_block_at(headings: list[tuple[int, str] | None], index: int) -> int | None:
    """The first line of the compact block holding line *index*, if any."""
    for i in range(index, -1, -1):
        found = headings[i]
        if _is_entry_heading(found):
            return None
        if found is not None and found[0] <= 2:
            return i if _is_compact_heading(found) else None
    return None


def _ends_block(found: tuple[int, str] | None, kind: Kind) -> bool:
    if found is None:
        return False
    if kind == "entry":
        return found[0] <= 3
    # A compact block's own sub-headings stay inside it, but an entry
    # appended after it (same session: no ``## Session`` heading between)
    # is not part of it.
    return found[0] <= 2 or _is_entry_heading(found)


def _span(lines: list[bytes], headings: list[tuple[int, str] | None], first: int) -> _Span:
    """The span of the entry or compact block whose heading is line *first*."""
    found = headings[first]
    kind: Kind = "compact" if _is_compact_heading(found) else "entry"
    last = len(lines) - 1
    for i in range(first + 1, len(lines)):
        if _ends_block(headings[i], kind):
            last = i - 1
            break
    lead = first
    if last == len(lines) - 1:
        # The last thing in the file: the blank line that an append put in
        # front of it goes too (see the module docstring).
        while lead > 0 and not lines[lead - 1].strip() and headings[lead - 1] is None:
            lead -= 1
        if lead == 0:
            lead = first  # never eat into a file that is nothing but blank lines
    start = sum(len(line) for line in lines[:lead])
    end = start + sum(len(line) for line in lines[lead : last + 1])
    return _Span(first=first, last=last, start=start, end=end, kind=kind)


def _locate_line(data: bytes, line_number: int, path: Path) -> _Span:
    lines = _lines(data)
    if not 1 <= line_number <= len(lines):
        raise NotFoundError(
            f"line {line_number} is past the end of {path} ({len(lines)} lines)",
            "run `memlane search` again for current chunk hashes",
        )
    headings = [_heading(line) for line in lines]
    index = line_number - 1
    block = _compact_block_at(headings, index)
    if block is not None:
        return _span(lines, headings, block)
    for i in range(index, -1, -1):
        found = headings[i]
        if found is None or found[0] > 3:
            continue
        if _is_entry_heading(found):
            return _span(lines, headings, i)
        level, title = found
        raise StoreError(
            f"line {line_number} of {path} is not inside an entry: it belongs to the "
            f"heading {'#' * level} {title!r} (line {i + 1})",
            "memory_forget removes one whole `### HH:MM` entry or `## Memory Compact` "
            "block; edit other text by hand",
        )
    raise StoreError(
        f"line {line_number} of {path} is before the first entry",
        "memory_forget removes one whole `### HH:MM` entry or `## Memory Compact` block",
    )


def _locate_time(data: bytes, hhmm: str, path: Path) -> _Span:
    lines = _lines(data)
    headings = [_heading(line) for line in lines]
    matches: list[int] = []
    times: list[str] = []
    for i, found in enumerate(headings):
        if _is_compact_heading(found):
            assert found is not None
            title_time = found[1].removeprefix("Memory Compact").strip()
        elif _is_entry_heading(found) and _compact_block_at(headings, i) is None:
            assert found is not None
            title_time = found[1]
        else:
            continue
        times.append(title_time)
        if title_time == hhmm:
            matches.append(i)
    if not matches:
        listed = ", ".join(dict.fromkeys(times)) or "none"
        raise NotFoundError(
            f"no entry at {hhmm} in {path} (entries there: {listed})",
            "give the exact HH:MM of an entry heading, or a chunk hash from `memlane search`",
        )
    if len(matches) > 1:
        raise StoreError(
            f"{len(matches)} entries in {path} are at {hhmm}; refusing to guess which one",
            "address the one you mean by its chunk hash (from `memlane search`)",
        )
    return _span(lines, headings, matches[0])


# -- the rewrite -------------------------------------------------------------------


@contextlib.contextmanager
def _store_lock(store_dir: Path) -> Iterator[None]:
    try:
        fd = os.open(store_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StoreError(
            f"cannot lock {store_dir} to remove an entry: {exc.strerror or exc}",
            "check that the store directory is writable by your user; nothing was removed",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _read_fd(fd: int, offset: int = 0) -> bytes:
    chunks: list[bytes] = []
    while True:
        piece = os.pread(fd, 1 << 20, offset)
        if not piece:
            return b"".join(chunks)
        chunks.append(piece)
        offset += len(piece)


def _write_temp(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)
    os.fsync(fd)


def _append(path: Path, data: bytes) -> None:
    # All or nothing, under the file's lock, like every appender (store/durable.py).
    append_whole(path, data, what="the appends being restored")


def _salvage(old_fd: int, seen: int, new_path: Path) -> None:
    """Step 5: move appends that reached the replaced inode to the new file."""
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < SALVAGE_QUIET_S:
        # Read under the old file's lock: an append cut short by a full disk
        # is rolled back under that lock, so its torn bytes are never copied.
        with flocked(old_fd, exclusive=False):
            late = _read_fd(old_fd, seen)
        if late:
            _append(new_path, late)
            seen += len(late)
            quiet_since = time.monotonic()
        else:
            time.sleep(SALVAGE_QUIET_S / 5)


def _daily_file(store_dir: Path, source: Path) -> Path:
    store = store_dir.resolve()
    path = source.expanduser()
    path = (store / path) if not path.is_absolute() else path
    real = path.resolve()
    if real.parent != store or not _DAILY_NAME_RE.match(real.name):
        raise StoreError(
            f"{source} is not a daily memory file of the store {store}",
            "memory_forget only removes entries from <store>/YYYY-MM-DD.md; "
            "use memory_topic remove for topics",
        )
    return real


def _remove(
    store_dir: Path,
    source: Path,
    locate: Callable[[bytes, Path], _Span],
    hooks: RewriteHooks | None,
) -> Removed:
    hooks = hooks or RewriteHooks()
    path = _daily_file(store_dir, source)
    with _store_lock(path.parent):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise NotFoundError(f"no daily memory file {path}") from None
        try:
            data = _read_fd(fd)
            span: _Span = locate(data, path)
            removed = data[span.start : span.end]
            # Decode before anything changes: the echo is the only copy left
            # of the removed text, so a file that cannot be shown is refused.
            markdown = _decode(removed, path)
            mode = os.fstat(fd).st_mode & 0o7777
            try:
                temp_fd, temp_name = tempfile.mkstemp(
                    prefix=f".{path.name}.forget-", suffix=".tmp", dir=path.parent
                )
            except OSError as exc:
                raise StoreError(
                    f"cannot write in {path.parent}: {exc.strerror or exc}",
                    "check that the store directory is writable by your user; nothing was removed",
                ) from None
            try:
                os.fchmod(temp_fd, mode)
                for _ in range(MAX_ROUNDS):
                    _write_temp(temp_fd, data[: span.start] + data[span.end :])
                    hooks.temp_written()
                    now = _read_fd(fd)
                    if now == data:
                        break
                    if not now.startswith(data):
                        raise StoreError(
                            f"{path} was rewritten (not just appended to) during the removal; "
                            "nothing was removed",
                            "try again",
                        )
                    data = now
                else:
                    raise StoreError(
                        f"{path} kept growing during the removal; nothing was removed",
                        "try again when fewer agents are writing",
                    )
                hooks.replace(temp_name, path)
            finally:
                os.close(temp_fd)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp_name)
            fsync_dirs([path.parent])
            _salvage(fd, len(data), path)
        finally:
            os.close(fd)
    return Removed(
        source=str(path),
        start_line=span.first + 1,
        end_line=span.last + 1,
        markdown=markdown,
        kind=span.kind,
    )


# -- public API ----------------------------------------------------------------------


def forget_chunk(
    store_dir: Path,
    source: str | Path,
    start_line: int,
    *,
    chunk_hash: str | None = None,
    model: str = "",
    hooks: RewriteHooks | None = None,
) -> Removed:
    """Remove the entry (or compact block) holding line *start_line* of *source*.

    With *chunk_hash*, the file as it is now (read under the lock) must
    still produce that chunk at *start_line* with *model*; otherwise the
    index is stale and nothing is removed. *hooks*: ``RewriteHooks``.
    """

    def locate(data: bytes, path: Path) -> _Span:
        if chunk_hash is not None:
            # Read as the indexer reads it (damaged lines empty), so an intact
            # entry of a damaged file has the hash the index holds.
            current = chunk_markdown(check_bytes(data, path).text, str(source), model)
            if not any(c.chunk_hash == chunk_hash and c.start_line == start_line for c in current):
                raise NotFoundError(
                    f"chunk {chunk_hash} no longer matches {path} (the file changed since "
                    "it was indexed); nothing was removed",
                    "run `memlane search` again for current chunk hashes",
                )
        return _locate_line(data, start_line, path)

    return _remove(store_dir, Path(source), locate, hooks)


def forget_entry(
    store_dir: Path, date: str, hhmm: str, *, hooks: RewriteHooks | None = None
) -> Removed:
    """Remove the one entry headed ``### HH:MM`` (or the compact block headed
    ``## Memory Compact HH:MM``) in ``<store>/<date>.md``.

    Several headings at that time are refused: use a chunk hash instead.
    *hooks*: ``RewriteHooks``.
    """
    date, hhmm = date.strip(), hhmm.strip()
    if not _DATE_RE.match(date):
        raise StoreError(f"invalid date {date!r}", "use YYYY-MM-DD, e.g. 2026-03-14")
    if not _TIME_RE.match(hhmm):
        raise StoreError(f"invalid time {hhmm!r}", "use HH:MM, 24-hour, e.g. 09:05")
    path = store_dir / f"{date}.md"
    if not path.is_file():
        raise NotFoundError(f"no daily memory file for {date} ({path})")
    return _remove(store_dir, path, lambda data, p: _locate_time(data, hhmm, p), hooks)
