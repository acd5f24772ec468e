"""Memory over time: per-day counts, one day's entries, and the entries each
session produced (the web viewer's timeline, day and session pages, hosts/web/).

Read-only views of the store and the sessions index. Counting a daily file
means reading it, so counts are kept per file and read again only when the
file's size or modification time changed: a timeline of a big store is then
one ``stat`` per file, not one read. The messages per day are counted again
only when the sessions index changed (registry.sessions_stamp).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class DayCount:
    """What happened on one day: journal entries written, topic files last
    changed, session messages (by their UTC timestamp)."""

    day: str
    journal: int = 0
    topics: int = 0
    messages: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "journal": self.journal,
            "topics": self.topics,
            "messages": self.messages,
        }


@dataclass(frozen=True)
class DayEntry:
    """One part of a daily file: a ``### HH:MM`` entry, a ``## Memory Compact``
    block (its ``###`` sub-sections included) or a hand-written section.

    The parts are store/forget_locate.py's ``blocks``: exactly the spans
    memory_forget removes. ``address`` is the time that removes the entry
    (``HH:MM#N``: the N-th entry at that time in the file); a hand-written
    section (kind ``other``) has none, as no removal takes it.
    """

    time: str
    address: str
    line: int  # the heading's line, 1-based
    kind: str  # "entry", "compact" or "other"
    text: str  # the entry's lines below the heading, anchor comment left out
    session: str | None = None
    turn: str | None = None
    transcript: str | None = None


@dataclass(frozen=True)
class DayFile:
    day: str
    path: str
    exists: bool
    entries: list[DayEntry] = field(default_factory=list)


_T = TypeVar("_T")


class DailyFiles(Generic[_T]):
    """What was read from each daily file of a store, read again only when the
    file's size or time changed (a view of a long store reads the day that grew)."""

    def __init__(self, read: Callable[[Path, str], _T]) -> None:
        self._read = read
        self._cache: dict[Path, tuple[tuple[int, int], _T]] = {}

    def each(self, store: Path) -> list[tuple[str, _T]]:
        """(day, what was read) for every daily file of *store*, in name order."""
        from memlane.store.layout import date_of

        found: list[tuple[str, _T]] = []
        seen: set[Path] = set()
        if not store.is_dir():
            return found
        for path in sorted(store.glob("*.md")):
            day = date_of(path)
            if day is None or not path.is_file():
                continue
            seen.add(path)
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            cached = self._cache.get(path)
            if cached is None or cached[0] != key:
                cached = (key, self._read(path, day))
                self._cache[path] = cached
            found.append((day, cached[1]))
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return found


class Timeline:
    """Per-day counts of one project's memory, cached per daily file."""

    def __init__(self, mem: ProjectMemory) -> None:
        self.mem = mem
        self._journal: DailyFiles[int] = DailyFiles(
            lambda path, _day: _removable_count(path.read_bytes())
        )
        self._messages: tuple[tuple[int, ...], dict[str, int]] | None = None

    def days(self) -> list[DayCount]:
        """Every day with something in it, oldest first."""
        journal = self._journal_counts()
        topics = self._topic_counts()
        messages = self._message_counts()
        days = sorted(set(journal) | set(topics) | set(messages))
        return [
            DayCount(day, journal.get(day, 0), topics.get(day, 0), messages.get(day, 0))
            for day in days
        ]

    def _journal_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for day, entries in self._journal.each(self.mem.scope.store):
            counts[day] = counts.get(day, 0) + entries
        return counts

    def _topic_counts(self) -> dict[str, int]:
        from memlane.core.errors import MemlaneError
        from memlane.store.topics.operations import list_topics

        counts: dict[str, int] = {}
        try:
            infos = list_topics(self.mem.scope.store)
        except (MemlaneError, OSError):
            return counts
        for info in infos:
            day = info.updated.strip()[:10]
            if _DAY_RE.match(day):
                counts[day] = counts.get(day, 0) + 1
        return counts

    def _message_counts(self) -> dict[str, int]:
        import sqlite3

        from memlane.core.errors import MemlaneError
        from memlane.engine.sessions.registry import open_store, sessions_stamp

        # Counted again only when the sessions index changed (its stamp).
        stamp = sessions_stamp(self.mem)
        if self._messages is not None and self._messages[0] == stamp:
            return self._messages[1]
        try:
            # One store per process (registry.py): it stays open for the next call.
            counts = open_store(self.mem).messages_per_day()
        except (MemlaneError, sqlite3.Error, OSError):
            return {}  # an unreadable sessions index: the timeline shows the notes
        self._messages = (stamp, counts)
        return counts


def _removable_count(data: bytes) -> int:
    """The entries and compact blocks of a daily file (what forget can take)."""
    from memlane.store.forget_locate import blocks

    return sum(1 for block in blocks(data) if block.kind != "other")


def day_file(mem: ProjectMemory, day: str) -> DayFile:
    """The daily file of *day* (``YYYY-MM-DD``), split into its blocks."""
    from memlane.core.errors import MemlaneError
    from memlane.store.anchor import parse_anchor
    from memlane.store.daily import daily_path
    from memlane.store.forget_locate import blocks
    from memlane.store.section import read_markdown

    if not _DAY_RE.match(day):
        raise MemlaneError(f"invalid date {day[:20]!r}", "use YYYY-MM-DD, e.g. 2026-03-14")
    from datetime import date

    try:
        path = daily_path(mem.scope.store, date.fromisoformat(day))
    except ValueError:
        raise MemlaneError(f"invalid date {day!r}", "use YYYY-MM-DD, e.g. 2026-03-14") from None
    if not path.is_file():
        return DayFile(day, str(path), False)
    # Damaged lines read as empty ones, so the line numbers stay the file's.
    text = read_markdown(path, mem.scope.store)
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    entries: list[DayEntry] = []
    for block in blocks(text.encode("utf-8")):
        heading_line = block.first if block.kind != "other" else block.first - 1
        body = lines[heading_line + 1 : block.last + 1]
        anchor = parse_anchor("\n".join(body[:2])) if block.kind != "other" else None
        shown = "\n".join(b for b in body if not b.lstrip().startswith("<!-- session:")).strip()
        entries.append(
            DayEntry(
                time=block.time,
                address=block.address,
                line=block.first + 1,
                kind=block.kind,
                text=shown,
                session=anchor.session if anchor else None,
                turn=anchor.turn if anchor else None,
                transcript=anchor.transcript if anchor else None,
            )
        )
    return DayFile(day, str(path), True, entries)


# -- the entries each session produced ---------------------------------------------

#: The first characters of an entry a listing shows.
PREVIEW_CHARS = 160


@dataclass(frozen=True)
class SessionEntry:
    """One journal entry a session produced: its day, time, address (what
    removes it: ``HH:MM#N``) and the start of its text."""

    day: str
    time: str
    address: str
    preview: str


class SessionEntries:
    """The entries of each session, cached per daily file."""

    def __init__(self, mem: ProjectMemory) -> None:
        self.mem = mem
        self._files: DailyFiles[list[tuple[str, SessionEntry]]] = DailyFiles(
            lambda _path, day: _entries_of(mem, day)
        )

    def by_session(self) -> dict[str, list[SessionEntry]]:
        """Session id → its entries, oldest first."""
        found: dict[str, list[SessionEntry]] = {}
        for _day, entries in self._files.each(self.mem.scope.store):
            for session, entry in entries:
                found.setdefault(session, []).append(entry)
        return found

    def of(self, session: str) -> list[SessionEntry]:
        return self.by_session().get(session, [])


def _entries_of(mem: ProjectMemory, day: str) -> list[tuple[str, SessionEntry]]:
    out: list[tuple[str, SessionEntry]] = []
    for entry in day_file(mem, day).entries:
        if entry.session and entry.kind != "other":
            text = " ".join(entry.text.split())
            preview = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
            out.append((entry.session, SessionEntry(day, entry.time, entry.address, preview)))
    return out
