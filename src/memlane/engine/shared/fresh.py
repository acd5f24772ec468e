"""Fresh writes: the store files this process changed since they were last indexed.

A session indexes ``INDEX_DEBOUNCE_MS`` after the last write, so a burst of
writes costs one run; a search in between would not see the memory written a
moment ago. So every write through ``Memory`` (``memory_write``, captures,
topic ``add``/``remove``) notes the file it touched here, and a search that
relies on the session's indexer first indexes just those files
(``Memory.internals.catch_up``, journal/catch_up.py): no walk of the store, and nothing at all when nothing
was written. A full index run clears what it covered, so after the debounced
run has picked a burst up the searches that follow cost nothing extra.

Every handle of one memory (``Memory.fork``: the session's, its indexer's,
its auto-context worker's) shares one ``FreshWrites``. Writes are numbered:
an index run only clears the notes older than the moment it started reading,
so a write that lands while it runs stays noted for the next one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.engine.shared.results import IndexReport

# How much text (embedding input: the notes as they stand, in characters) the
# auto-context worker may embed before its search, inside the
# AUTO_CONTEXT_CAP_MS (300 ms) deadline. The cost grows with the text, not
# with the number of chunks. Measured with the bundled model on 2 busy cores
# (load ~3), indexing one fresh entry before a search took, by embedding
# input: 133 characters (a one-line note) 19 ms, 613 75 ms, 913 94 ms, 1,313
# 113 ms, 1,666 159 ms (benchmarks/bench_fresh.py has the in-session
# figures). The prompt's own search takes 11-17 ms and topic surfacing up to
# ~50 ms (its p95 in docs/benchmarks.md), more on a loaded machine. 1,000
# characters (~100 ms there) cover what usually lands between two prompts:
# one captured entry, or a few memory_write notes, and
# leave the deadline room to spare. More is a burst: the debounced index
# takes it in the background and the prompt goes on without the newest
# entries. An explicit search (memory_search, memory_topic search) has no
# such cap: it indexes everything fresh, since its caller asked for what was
# just written. A tuning knob, read when a session starts its auto-context
# worker.
AUTO_CONTEXT_CATCH_UP_CHARS = 1000


@dataclass
class CatchUpStats:
    """What the catch-ups before searches did (``memory_status`` shows it)."""

    runs: int = 0  # catch-ups that found something to index
    files: int = 0  # files they indexed or removed from the index
    chunks: int = 0  # chunks they wrote to the index
    embedded: int = 0  # chunks they embedded
    left_to_indexer: int = 0  # catch-ups skipped: more text to embed than the caller's limit
    failed: int = 0  # catch-ups that failed (the search went on without them)
    last_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "files": self.files,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "left_to_indexer": self.left_to_indexer,
            "failed": self.failed,
            "last_ms": None if self.last_ms is None else round(self.last_ms, 2),
        }


class FreshWrites:
    """The files written since they were last indexed, numbered by write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serial = 0
        self._pending: dict[str, int] = {}
        # Files a catch-up indexed that no recorded index run has covered:
        # the next full run records its report even when it has nothing
        # left to do, so the index state file keeps describing the index.
        self._unrecorded = False
        self.stats = CatchUpStats()

    def note(self, paths: Iterable[str | Path]) -> None:
        """These files were just written (or removed)."""
        with self._lock:
            self._serial += 1
            for path in paths:
                self._pending[str(path)] = self._serial

    def snapshot(self) -> tuple[int, list[str]]:
        """(the latest write's number, the files waiting), for an index run about to read them."""
        with self._lock:
            return self._serial, sorted(self._pending)

    def indexed(self, upto: int, paths: Iterable[str] | None = None) -> None:
        """An index run that started after write *upto* covered *paths* (None: every file)."""
        with self._lock:
            chosen = list(self._pending) if paths is None else list(paths)
            for path in chosen:
                if self._pending.get(path, upto + 1) <= upto:
                    del self._pending[path]

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._pending)

    @property
    def unrecorded(self) -> bool:
        with self._lock:
            return self._unrecorded

    def recorded(self) -> None:
        """A full index run recorded its report in the index state file."""
        with self._lock:
            self._unrecorded = False

    def caught_up(self, report: IndexReport, files: int, ms: float) -> None:
        """A catch-up indexed (or removed) *files* files."""
        with self._lock:
            self._unrecorded = True
            self.stats.runs += 1
            self.stats.files += files
            self.stats.chunks += report.indexed_chunks
            self.stats.embedded += report.embedded_chunks
            self.stats.last_ms = ms

    def left_to_indexer(self) -> None:
        with self._lock:
            self.stats.left_to_indexer += 1

    def failed(self) -> None:
        with self._lock:
            self.stats.failed += 1

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            stats = self.stats.to_json()
            return {"waiting_files": len(self._pending), **stats}
