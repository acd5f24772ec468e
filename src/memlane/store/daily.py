"""Daily memory files and the entries appended to them.

A daily file ``<store>/YYYY-MM-DD.md`` is shared by every agent working on
the project, in this process or another, so writing follows the mesh's
concurrency contract (reference: pi-memsearch "Degradation"):

* Entries never interleave and none goes missing: each entry is exactly one
  ``os.write`` on a descriptor opened with ``O_APPEND``. The kernel places
  every such write at the end of the file atomically with respect to other
  appenders.
* An entry is written whole or not at all: a write cut short by a full disk
  is cut back off under the file's ``flock``, which every memlane appender
  holds for its write (store/durable.append_whole), and the caller is told
  that the disk is full. So a full disk never leaves half an anchor or half
  a UTF-8 character in the file.
* A session never duplicates its own ``## Session HH:MM`` heading: the
  decision is process state (``DailyWriter``), seeded by one read of the
  file at the session's first write to it.
* A resumed session in a fresh process may still duplicate its heading if
  another writer races that single seeding read; that costs a heading, never
  an entry, which is the bound the mesh accepts.
* The ``# YYYY-MM-DD`` title is written by whoever creates the file, and the
  file only ever appears with its title already in it (written to a private
  temporary file, then hard-linked into place, which fails if the daily
  file exists), so the title is written once and always comes first.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import threading
from datetime import date, datetime
from pathlib import Path

from memlane.core.clock import local as local_time
from memlane.core.diskspace import disk_full_error, is_disk_full
from memlane.core.errors import StoreError
from memlane.core.types import Anchor, Entry
from memlane.store import safe_paths
from memlane.store.anchor import session_marker
from memlane.store.durable import append_whole

_TIME_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_BULLET_PREFIXES = ("- ", "* ", "+ ")
_COMMENT_LINE_RE = re.compile(r"<!--(?:(?!-->).)*-->")


def daily_path(store_dir: Path, day: date) -> Path:
    """``<store>/YYYY-MM-DD.md`` for *day* (a local date)."""
    return store_dir / f"{day.isoformat()}.md"


def new_entry_id() -> str:
    """A random entry id: 8 lowercase hex digits."""
    return secrets.token_hex(4)


def _bullets(text: str) -> list[str]:
    """Each non-blank line as a bullet, existing bullets kept as written.

    ``splitlines`` is deliberate: a stray ``\\r`` or ``\\u2028`` in the
    text becomes a line break here instead of a character that other tools
    count as one, so the file only ever contains ``\\n`` line breaks.
    """
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if _COMMENT_LINE_RE.fullmatch(stripped):
            out.append(stripped)  # a marker (``supersedes``), as the anchor line is
        elif line.lstrip().startswith(_BULLET_PREFIXES):
            out.append(line.rstrip())  # nested bullets keep their indentation
        else:
            out.append(f"- {stripped}")
    return out


def format_entry(time_hhmm: str, anchor: Anchor | None, text: str) -> str:
    """``### HH:MM``, the anchor line if any, then *text* as bullets.

    Lines are joined by ``\\n`` and the result ends with one ``\\n``. Text
    with nothing but whitespace is refused: an entry must say something.
    """
    if not _TIME_RE.match(time_hhmm):
        raise StoreError(f"invalid entry time {time_hhmm!r}", "use HH:MM, 24-hour, e.g. 09:05")
    bullets = _bullets(text)
    if not bullets:
        raise StoreError("nothing to write: the entry text is empty", "pass some text")
    head = [f"### {time_hhmm}"]
    if anchor is not None:
        head.append(anchor.render())
    return "\n".join([*head, *bullets]) + "\n"


def corrected_entry(block: str, text: str) -> str:
    """*block* (an entry or compact block as the file holds it) with its text
    replaced by *text* (as bullets): its heading line and its comment lines
    (the anchor, ``supersedes`` markers) stay, and so do the blank lines
    that ended it. Text with nothing but whitespace is refused."""
    bullets = _bullets(text)
    if not bullets:
        raise StoreError(
            "nothing to write: the corrected text is empty",
            "type the entry's new text, or forget the entry instead",
        )
    body = block.strip("\n")
    start = block.index(body) if body else 0
    leading, ending = block[:start], block[start + len(body) :]
    lines = body.split("\n")
    kept = [lines[0], *(ln.strip() for ln in lines[1:] if _COMMENT_LINE_RE.fullmatch(ln.strip()))]
    return leading + "\n".join([*kept, *bullets]) + ending


def create_with_title(path: Path, day: date) -> None:
    """Create *path* holding only its title, unless it already exists.

    The title goes into a private temporary file first, which is then
    hard-linked to *path*; ``link`` fails if *path* exists, so of several
    racing creators exactly one wins and no appender can ever get in ahead
    of the title. Where hard links are unsupported, fall back to
    ``O_CREAT|O_EXCL`` (one title still, but a racing append could land
    first).
    """
    title = f"# {day.isoformat()}\n".encode()
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            _write_all_at_once(fd, title, temp)
        finally:
            os.close(fd)
        os.link(temp, path)
    except FileExistsError:
        pass
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        _create_exclusive(path, title)
    finally:
        # Also when the title did not fit (a full disk): no temp file is left.
        os.unlink(temp)


def _create_exclusive(path: Path, title: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except FileExistsError:
        return
    try:
        _write_all_at_once(fd, title, path)
    finally:
        os.close(fd)


def _write_all_at_once(fd: int, data: bytes, path: Path) -> None:
    # A second write for the remainder could interleave with another writer,
    # so a short write is an error, not something to finish.
    written = os.write(fd, data)
    if written != len(data):
        raise disk_full_error(path, f"only {written} of {len(data)} bytes were written")


class DailyWriter:
    """Appends memory entries; one per process (or per agent session).

    Holds which ``(daily file, session id)`` pairs already have their
    ``## Session`` heading. Thread-safe: concurrent appends from one
    process are serialised so a session's first write seeds exactly once.
    """

    def __init__(self) -> None:
        self._headed: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def append(
        self,
        store_dir: Path,
        text: str,
        anchor: Anchor | None,
        now: datetime,
        session_id: str | None,
    ) -> Entry:
        """Append one entry to today's file and return exactly what was written.

        The entry is a blank line, ``## Session HH:MM`` (first write of this
        session to this file only; never when *session_id* is None), then
        ``format_entry``'s text.
        """
        # File names and headings are local time, like every other mesh
        # writer's; the clock's offset says what local is (core/clock.py).
        local = local_time(now)
        time_hhmm = local.strftime("%H:%M")
        body = format_entry(time_hhmm, anchor, text)
        path = daily_path(store_dir, local.date()).absolute()
        key = (str(path), session_id) if session_id is not None else None
        with self._lock:
            try:
                # A store (or daily file) that is a link is refused before
                # anything is created through it: a repository can commit one.
                safe_paths.check_store_path(store_dir, path)
                store_dir.mkdir(parents=True, exist_ok=True)
                if not os.path.lexists(path):
                    create_with_title(path, local.date())
                heading = (
                    key is not None
                    and key not in self._headed
                    and not self._seen_in_file(store_dir, path, key[1])
                )
                entry_text = "\n" + (f"## Session {time_hhmm}\n" if heading else "") + body
                self._append(path, entry_text.encode("utf-8"))
            except OSError as error:
                if is_disk_full(error):
                    raise disk_full_error(path, "the entry was not written") from None
                raise StoreError(
                    f"cannot write memory file {path}: {error.strerror or error}",
                    "check that the store directory is writable",
                ) from None
            if key is not None:
                self._headed.add(key)
        return Entry(
            path=str(path),
            time=time_hhmm,
            text=entry_text,
            anchor=anchor,
            session_heading_written=heading,
        )

    @staticmethod
    def _seen_in_file(store_dir: Path, path: Path, session_id: str) -> bool:
        """The one seeding read: does the file already anchor this session?"""
        try:
            data = safe_paths.read_bytes(store_dir, path)
        except FileNotFoundError:
            return False
        return session_marker(session_id).search(data) is not None

    @staticmethod
    def _append(path: Path, data: bytes) -> None:
        # All or nothing, under the file's lock, never through a link
        # (store/durable.append_whole); append checked the directories.
        append_whole(path, data)
