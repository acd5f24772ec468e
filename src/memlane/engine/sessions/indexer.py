"""The hook path: a transcript the host just wrote, ingested on a worker thread."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

from memlane.core.trace import trace
from memlane.engine.sessions.ingest import SessionIngestor
from memlane.transcripts.locate import Source, format_of_path


class SessionIndexer:
    """The hook path: ``index_new(path)`` enqueues; a worker thread ingests.

    The host's call costs a queue put (microseconds); the read, embed and
    write happen on the worker, which coalesces repeated calls for a file.
    """

    def __init__(self, ingestor: SessionIngestor) -> None:
        self.ingestor = ingestor
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._pending: set[Path] = set()
        self._pending_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.reports: int = 0

    def index_new(self, transcript_path: str | Path) -> None:
        path = Path(transcript_path)
        with self._pending_lock:
            if path in self._pending:
                return
            self._pending.add(path)
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memlane-sessions-hook", daemon=True
                )
                self._thread.start()
        self._queue.put(path)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            if path is None:
                return
            with self._pending_lock:
                self._pending.discard(path)
            try:
                self.ingestor.ingest([Source(path, format_of_path(path))], operation="hook")
                self.reports += 1
            except Exception as exc:  # the worker must survive any one file
                self.last_error = f"{type(exc).__name__}: {exc}"
                trace("sessions", "hook.error", path=path, error=self.last_error)
            with self._pending_lock:
                if not self._pending and self._queue.empty():
                    self._idle.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every enqueued file was ingested; False on timeout."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
            self._thread = None
