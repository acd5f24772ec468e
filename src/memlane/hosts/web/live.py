"""Live pages: the store watched by one thread, its changes as server-sent events.

``StoreWatcher`` stats the store's markdown files (the daily files, MEMORY.md
and ``topics/*.md``) every ``POLL_S`` seconds on one thread shared by every
open page, and only while a page listens: a write appends to a daily file
(its size and time change) or replaces a topic file (the directory's entry
changes), so a new entry is seen within one poll. The stat costs one
``scandir`` of two directories, a few hundred files at most (one per day).
It stats the index files too (the notes index and the sessions index, with
their write-ahead logs, never the ``-shm`` a reader touches), so indexing
as it advances (an entry becoming searchable, past messages arriving) is
an event as well.

``event_stream`` is what ``/events`` sends a page: ``changed`` when the
store changed (the page then fetches its live part again), a comment every
``HEARTBEAT_S`` so a closed tab is noticed, and the end of the stream when
the server stops (uvicorn waits for open responses before it exits).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

#: How often the store is looked at while a page listens.
POLL_S = 0.5
#: A comment this often keeps the stream open and finds closed tabs.
HEARTBEAT_S = 15.0
#: How often a stream checks whether the server is stopping.
STOP_CHECK_S = 0.5

Signature = tuple[tuple[str, int, int], ...]


def store_signature(store: Path, also: tuple[Path, ...] = ()) -> Signature:
    """(name, size, mtime) of every markdown file of the store and its topics,
    and of the files *also* names that exist."""
    found: list[tuple[str, int, int]] = []
    for path in also:
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((str(path), st.st_size, st.st_mtime_ns))
    for directory in (store, store / "topics"):
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.endswith(".md"):
                        try:
                            st = entry.stat()
                        except OSError:
                            continue
                        found.append((entry.path, st.st_size, st.st_mtime_ns))
        except OSError:
            continue
    return tuple(sorted(found))


class StoreWatcher:
    """One polling thread for every listening page (see the module docstring)."""

    def __init__(self, store: Path, interval: float = POLL_S, also: tuple[Path, ...] = ()) -> None:
        self.store = store
        self.also = also
        self.interval = interval
        self.version = 0
        self._lock = threading.Lock()
        self._listeners: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def subscribe(self) -> asyncio.Event:
        """An event set whenever the store changes (call it on the event loop)."""
        event = asyncio.Event()
        with self._lock:
            self._listeners.add((asyncio.get_running_loop(), event))
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(
                    target=self._run,
                    args=(store_signature(self.store, self.also),),
                    daemon=True,
                    name="memlane-ui-watch",
                )
                self._thread.start()
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        with self._lock:
            self._listeners = {pair for pair in self._listeners if pair[1] is not event}

    def close(self) -> None:
        self._closed.set()

    def _run(self, last: Signature) -> None:
        while not self._closed.wait(self.interval):
            with self._lock:
                if not self._listeners:
                    self._thread = None  # the next page to listen starts another
                    return
            current = store_signature(self.store, self.also)
            if current == last:
                continue
            last = current
            with self._lock:
                self.version += 1
                listeners = list(self._listeners)
            for loop, event in listeners:
                try:
                    loop.call_soon_threadsafe(event.set)
                except RuntimeError:  # that page's loop has closed
                    self.unsubscribe(event)


async def event_stream(watcher: StoreWatcher, stopping: Callable[[], bool]) -> AsyncIterator[str]:
    """The server-sent events of one page (see the module docstring)."""
    event = watcher.subscribe()
    try:
        # Listening from here on (the page may say so); the browser
        # reconnects a second after a dropped stream.
        yield f"retry: 1000\nevent: ready\ndata: {watcher.version}\n\n"
        quiet = 0.0
        while not stopping():
            try:
                await asyncio.wait_for(event.wait(), STOP_CHECK_S)
            except TimeoutError:
                quiet += STOP_CHECK_S
                if quiet >= HEARTBEAT_S:
                    quiet = 0.0
                    yield ": still here\n\n"
                continue
            event.clear()
            quiet = 0.0
            yield f"event: changed\ndata: {watcher.version}\n\n"
    finally:
        watcher.unsubscribe(event)
