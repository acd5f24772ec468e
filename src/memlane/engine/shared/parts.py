"""What every handle of one project's memory shares: the embedder, the writer, fresh writes.

An index connection belongs to one thread, so each worker of a session gets
its own ``Memory`` handle (``Memory.fork``); the embedder's state (one model
load per process, engine/shared/embedding.py), the daily-file writer (one
``## Session`` decision per process) and the record of fresh writes are held
here, once, for all of them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memlane.engine.shared.embedding import EmbedderState
from memlane.engine.shared.fresh import FreshWrites

if TYPE_CHECKING:
    from memlane.store.daily import DailyWriter


class SharedParts:
    """The embedder's state, the writer and fresh writes."""

    def __init__(self, embedder_state: EmbedderState | None = None) -> None:
        #: The embedder's state (engine/shared/embedding.py), shared with ``sharing_embedder``.
        self.embedder_state = embedder_state or EmbedderState()
        self._writer: DailyWriter | None = None
        self._writer_lock = threading.Lock()
        self.fresh = FreshWrites()
        self._runs_lock = threading.Lock()
        self._index_runs = 0  # full index runs under way in this process

    @contextmanager
    def index_run(self) -> Iterator[None]:
        """Around a full index run of this project: while one is under way the
        index is being built, and a search says so (``indexing``)."""
        with self._runs_lock:
            self._index_runs += 1
        try:
            yield
        finally:
            with self._runs_lock:
                self._index_runs -= 1

    @property
    def indexing(self) -> bool:
        """A full index run of this project is under way in this process."""
        return self._index_runs > 0

    @property
    def working(self) -> bool:
        """Work a process that serves this project should not exit in the middle
        of: an index run, or the model loading or warming up."""
        return self.indexing or self.embedder_state.busy

    def sharing_embedder(self) -> SharedParts:
        """Parts for another project of this process: this embedder (one model load for
        both), but its own writer and fresh writes (they name that project's files)."""
        return SharedParts(self.embedder_state)

    def writer(self) -> DailyWriter:
        with self._writer_lock:
            if self._writer is None:
                from memlane.store.daily import DailyWriter

                self._writer = DailyWriter()
            return self._writer
