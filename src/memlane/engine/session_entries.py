"""Which journal entries each session produced: the entries whose anchor
(``<!-- session:… turn:… transcript:… -->``) names it (the web viewer's
Sessions and Session pages).

Read-only. A daily file is read again only when its size or modification
time changed (as timeline.py counts entries), so listing a big store's
sessions costs one ``stat`` per daily file once the files were read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory

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
        self._files: dict[Path, tuple[tuple[int, int], list[tuple[str, SessionEntry]]]] = {}

    def by_session(self) -> dict[str, list[SessionEntry]]:
        """Session id → its entries, oldest first."""
        from memlane.store.layout import date_of

        store = self.mem.scope.store
        found: dict[str, list[SessionEntry]] = {}
        if not store.is_dir():
            return found
        seen: set[Path] = set()
        for path in sorted(store.glob("*.md")):
            day = date_of(path)
            if day is None or not path.is_file():
                continue
            seen.add(path)
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            cached = self._files.get(path)
            if cached is None or cached[0] != key:
                cached = (key, _entries_of(self.mem, day))
                self._files[path] = cached
            for session, entry in cached[1]:
                found.setdefault(session, []).append(entry)
        for gone in set(self._files) - seen:
            del self._files[gone]
        return found

    def of(self, session: str) -> list[SessionEntry]:
        return self.by_session().get(session, [])


def _entries_of(mem: ProjectMemory, day: str) -> list[tuple[str, SessionEntry]]:
    from memlane.engine.timeline import day_file

    out: list[tuple[str, SessionEntry]] = []
    for entry in day_file(mem, day).entries:
        if entry.session and entry.kind != "other":
            text = " ".join(entry.text.split())
            preview = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
            out.append((entry.session, SessionEntry(day, entry.time, entry.address, preview)))
    return out
