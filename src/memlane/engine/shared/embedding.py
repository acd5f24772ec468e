"""The embedder state as one object: loaded once per process, failed calls remembered.

``EmbedderState`` is what several projects of one process share (one model
load for all of them, engine/shared/parts.py); ``Embedding`` is one memory's view
of it with that project's ``[embedding]`` settings (``Memory.embedding``):
the embedder, whether a search would wait for it, why it is missing, the
warm-up and the query vectors every search leg asks for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError

if TYPE_CHECKING:
    from memlane.core.settings import EmbeddingSettings
    from memlane.core.types import SearchMode
    from memlane.embed.base import Embedder, Vectors
    from memlane.engine.shared.results import IndexReport

#: A failed embedder load is retried after this long (the negative cache). A
#: tuning knob read at call time, so a host (or a test) may shorten it.
EMBEDDER_RETRY_S = 30.0


class EmbedderState:
    """The embedder (loaded lazily, with a negative cache) and the outcome of its calls."""

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

    def load(self, settings: EmbeddingSettings) -> Embedder | None:
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
                    self.embedder = _Watched(made, self) if made is not None else None
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
        if self.last_failure is not None and self.last_failure_at > self.last_success_at:
            return self.last_failure
        return None

    @property
    def outcome_known(self) -> bool:
        """An embedding call has succeeded or failed in this process."""
        return self.last_success_at > 0 or self.last_failure_at > 0

    @property
    def ready(self) -> bool:
        """True when a search would not wait for the model to load."""
        if not self.embedder_loaded or self.loading:
            return False
        # Lazy providers say whether their model is in memory yet (indexing may
        # have loaded it); the others are ready once they exist.
        return self.warmed or bool(getattr(self.embedder, "loaded", True))

    @property
    def loading_now(self) -> bool:
        """The model is being loaded or warmed up (a first start derives it) by
        another thread right now: a search that embeds would wait for it."""
        return (self.loading or self.warming > 0) and not self.warmed

    @property
    def busy(self) -> bool:
        """The model is loading or warming up (work a process should not exit in)."""
        return self.loading or self.warming > 0

    def warm(self, settings: EmbeddingSettings) -> None:
        """Load the model now (a session does this in the background at start).

        Providers load lazily, so a broken model or an unreachable server
        only shows at the first embedding; found here, it enters the
        negative cache instead of costing the first search its wait.
        """
        self._warming(+1)
        try:
            embedder = self.load(settings)
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
            self.note_success()
            self.warmed = True
        finally:
            self._warming(-1)

    def _warming(self, step: int) -> None:
        with self.warming_lock:
            self.warming += step

    def failed(self, exc: EmbedderError) -> None:
        """An embedding call failed: skip the dense leg until the retry time."""
        self.note_failure(exc.message)
        with self.lock:
            self.embedder = None
            self.embedder_problem = exc.message
            self.embedder_failed_at = time.monotonic()
            self.embedder_loaded = True
            self.warmed = False

    def query_vector(
        self, settings: EmbeddingSettings, query: str, mode: SearchMode, notices: list[str]
    ) -> Vectors | None:
        """The query's vector for a search in *mode*, or None for a lexical one.

        Hybrid falls back to lexical with a notice when the embedder is
        missing or fails (a failure enters the negative cache); semantic
        raises instead, since it has no fallback. Shared by every search that
        embeds a query: this project's, the sessions layer's, the fan-out's.
        """
        if mode == "lexical" or not query.strip():
            return None
        embedder = self.load(settings)
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


class Embedding:
    """One memory's embedder: the process's ``EmbedderState`` with this project's settings."""

    def __init__(self, state: EmbedderState, settings: EmbeddingSettings) -> None:
        self._state = state
        self._settings = settings

    @property
    def model(self) -> str:
        """The model name that goes into every chunk hash."""
        return self._settings.model

    @property
    def embedder(self) -> Embedder | None:
        """The embedder, or None (with ``problem`` saying why); loads on first use."""
        return self._state.load(self._settings)

    @property
    def ready(self) -> bool:
        """True when a search would not wait for the model to load."""
        return self._state.ready

    @property
    def problem(self) -> str | None:
        """Why ``embedder`` is None (or the last load failed), else None."""
        return self._state.embedder_problem

    def warm(self) -> None:
        """Load the model now (a session does this in the background at start)."""
        self._state.warm(self._settings)

    def query_vector(self, query: str, mode: SearchMode, notices: list[str]) -> Vectors | None:
        """The query's vector for a search in *mode*, or None for a lexical one."""
        return self._state.query_vector(self._settings, query, mode, notices)

    def note_unembedded(self, report: IndexReport, problem: str | None = None) -> None:
        """Say so in *report* when its chunks were stored without vectors
        (*problem*: the index run's own, else the embedder's)."""
        problem = problem or self.problem
        if problem and report.unembedded_chunks and report.vectors_expected:
            report.notices.append(
                f"semantic search unavailable ({problem}); chunks were stored for lexical search"
            )


class _Watched:
    """An embedder whose every call's outcome the shared state records.

    Every other attribute (``loaded``, ``warm``, ``close``...) is the wrapped
    embedder's own.
    """

    def __init__(self, inner: Embedder, state: EmbedderState) -> None:
        self._inner = inner
        self._state = state

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
            self._state.note_failure(exc.message)
            raise
        self._state.note_success()
        return vectors

    def embed_query(self, text: str) -> Vectors:
        try:
            vector = self._inner.embed_query(text)
        except EmbedderError as exc:
            self._state.note_failure(exc.message)
            raise
        self._state.note_success()
        return vector

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
