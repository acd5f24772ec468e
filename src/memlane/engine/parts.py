"""What every handle of one project's memory shares: the embedder, the writer, fresh writes.

An index connection belongs to one thread, so each worker of a session gets
its own ``Memory`` handle (``Memory.fork``); the embedder (one model load per
process), the daily-file writer (one ``## Session`` decision per process)
and the record of fresh writes are held here, once, for all of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError
from memlane.engine.journal.fresh import FreshWrites

if TYPE_CHECKING:
    from memlane.core.settings import EmbeddingSettings
    from memlane.embed.base import Embedder, Vectors
    from memlane.store.daily import DailyWriter

#: A failed embedder load is retried after this long (the negative cache). A
#: tuning knob read at call time, so a host (or a test) may shorten it.
EMBEDDER_RETRY_S = 30.0


class _Model:
    """The embedder's state: what several projects of one process may share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.embedder: Embedder | None = None
        self.embedder_loaded = False
        self.embedder_problem: str | None = None
        self.embedder_failed_at = 0.0
        self.loading = False
        self.warmed = False
        self.warming = 0  # warm() calls running (a first load derives the model)
        self.warming_lock = threading.Lock()
        # The outcome of the last real embedding call, whoever made it (a search,
        # an index run, the sessions layer): what status reports, not whether an
        # embedder object exists (a reload after the retry time always succeeds).
        self.last_failure: str | None = None
        self.last_failure_at = 0.0  # monotonic; 0: never
        self.last_success_at = 0.0

    def note_failure(self, message: str) -> None:
        self.last_failure = message
        self.last_failure_at = time.monotonic()

    def note_success(self) -> None:
        self.last_success_at = time.monotonic()


class _Watched:
    """An embedder whose every call's outcome the shared model state records.

    Every other attribute (``loaded``, ``warm``, ``close``...) is the wrapped
    embedder's own.
    """

    def __init__(self, inner: Embedder, model: _Model) -> None:
        self._inner = inner
        self._model = model

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int | None:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        try:
            vectors = self._inner.embed(texts)
        except EmbedderError as exc:
            self._model.note_failure(exc.message)
            raise
        self._model.note_success()
        return vectors

    def embed_query(self, text: str) -> Vectors:
        try:
            vector = self._inner.embed_query(text)
        except EmbedderError as exc:
            self._model.note_failure(exc.message)
            raise
        self._model.note_success()
        return vector

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _model_field(name: str) -> property:
    def get(self: SharedParts) -> object:
        return getattr(self._model, name)

    def put(self: SharedParts, value: object) -> None:
        setattr(self._model, name, value)

    return property(get, put)


class SharedParts:
    """The embedder (loaded lazily, with a negative cache), the writer and fresh writes."""

    lock: threading.Lock = _model_field("lock")  # type: ignore[assignment]
    embedder: Embedder | None = _model_field("embedder")  # type: ignore[assignment]
    embedder_loaded: bool = _model_field("embedder_loaded")  # type: ignore[assignment]
    embedder_problem: str | None = _model_field("embedder_problem")  # type: ignore[assignment]
    embedder_failed_at: float = _model_field("embedder_failed_at")  # type: ignore[assignment]
    loading: bool = _model_field("loading")  # type: ignore[assignment]
    warmed: bool = _model_field("warmed")  # type: ignore[assignment]

    def __init__(self, model: _Model | None = None) -> None:
        self._model = model or _Model()
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
    def loading_now(self) -> bool:
        """The model is being loaded or warmed up (a first start derives it) by
        another thread right now: a search that embeds would wait for it."""
        return (self.loading or self._model.warming > 0) and not self.warmed

    @property
    def working(self) -> bool:
        """Work a process that serves this project should not exit in the middle
        of: an index run, or the model loading or warming up."""
        return self.indexing or self.loading or self._model.warming > 0

    def sharing_embedder(self) -> SharedParts:
        """Parts for another project of this process: this embedder (one model load for
        both), but its own writer and fresh writes (they name that project's files)."""
        return SharedParts(self._model)

    def writer(self) -> DailyWriter:
        with self._writer_lock:
            if self._writer is None:
                from memlane.store.daily import DailyWriter

                self._writer = DailyWriter()
            return self._writer

    def load_embedder(self, settings: EmbeddingSettings) -> Embedder | None:
        """The embedder, or None (with ``embedder_problem`` saying why).

        Loads on first use. A failed load is retried after
        ``EMBEDDER_RETRY_S`` (a short negative cache), so a provider that
        comes back mid-session is picked up without a restart.
        """
        with self.lock:
            stale = (
                self.embedder_loaded
                and self.embedder is None
                and settings.provider != "none"
                and time.monotonic() - self.embedder_failed_at >= EMBEDDER_RETRY_S
            )
            if not self.embedder_loaded or stale:
                from memlane.embed.factory import make_embedder

                self.embedder_problem = None
                self.loading = True
                try:
                    made = make_embedder(settings)
                    self.embedder = _Watched(made, self._model) if made is not None else None
                    if self.embedder is None:
                        self.embedder_problem = "embedding.provider is none"
                except EmbedderError as exc:
                    self.embedder = None
                    self.embedder_problem = exc.message
                    self.embedder_failed_at = time.monotonic()
                finally:
                    self.loading = False
                self.embedder_loaded = True
            return self.embedder

    @property
    def recent_failure(self) -> str | None:
        """Why the last real embedding call failed, when none has succeeded since."""
        model = self._model
        if model.last_failure is not None and model.last_failure_at > model.last_success_at:
            return model.last_failure
        return None

    @property
    def embedder_outcome_known(self) -> bool:
        """An embedding call has succeeded or failed in this process."""
        return self._model.last_success_at > 0 or self._model.last_failure_at > 0

    @property
    def embedder_ready(self) -> bool:
        """True when a search would not wait for the model to load."""
        if not self.embedder_loaded or self.loading:
            return False
        # Lazy providers say whether their model is in memory yet (indexing may
        # have loaded it); the others are ready once they exist.
        return self.warmed or bool(getattr(self.embedder, "loaded", True))

    def warm(self, settings: EmbeddingSettings) -> None:
        """Load the model now (a session does this in the background at start).

        Providers load lazily, so a broken model or an unreachable server
        only shows at the first embedding; found here, it enters the
        negative cache instead of costing the first search its wait.
        """
        self._warming(+1)
        try:
            embedder = self.load_embedder(settings)
            if embedder is None:
                return
            try:
                warm = getattr(embedder, "warm", None)
                if callable(warm):
                    warm()
                else:
                    embedder.embed_query("memlane warm-up")
            except EmbedderError as exc:
                self.failed(exc)
                return
            self._model.note_success()
            self.warmed = True
        finally:
            self._warming(-1)

    def _warming(self, step: int) -> None:
        with self._model.warming_lock:
            self._model.warming += step

    def failed(self, exc: EmbedderError) -> None:
        """An embedding call failed: skip the dense leg until the retry time."""
        self._model.note_failure(exc.message)
        with self.lock:
            self.embedder = None
            self.embedder_problem = exc.message
            self.embedder_failed_at = time.monotonic()
            self.embedder_loaded = True
            self.warmed = False

    def query_vector(
        self, settings: EmbeddingSettings, query: str, mode: str, notices: list[str]
    ) -> Vectors | None:
        """The query's vector for a search in *mode*, or None for a lexical one.

        Hybrid falls back to lexical with a notice when the embedder is
        missing or fails (a failure enters the negative cache); semantic
        raises instead, since it has no fallback. Shared by every search that
        embeds a query: this project's, the sessions layer's, the fan-out's.
        """
        if mode == "lexical" or not query.strip():
            return None
        embedder = self.load_embedder(settings)
        if embedder is None:
            if mode == "semantic":
                raise EmbedderError(f"semantic search needs an embedder ({self.embedder_problem})")
            if settings.provider != "none":  # none: lexical by choice
                notices.append(
                    f"semantic search unavailable ({self.embedder_problem}); "
                    "showing lexical (BM25) results"
                )
            return None
        try:
            vector = embedder.embed_query(query)
        except EmbedderError as exc:
            self.failed(exc)
            if mode == "semantic":
                raise
            notices.append(
                f"semantic search unavailable ({exc.message}); showing lexical (BM25) results"
            )
            return None
        self.warmed = True
        return vector
