"""The session-document store: every message of the project's agent transcripts.

One SQLite file per project next to its markdown index
(``<index dir>/<collection>.sessions.sqlite``), so the markdown index stays
rebuildable from markdown and this one from the transcripts.

The tables deliberately reuse the main index's names and filter columns
(``chunks``, ``chunks_fts``, ``tombstones``, ``meta`` with the same keys,
the ``chunks_filter`` covering index): the lexical leg (``legs/lexical.py``), the
in-memory vector matrix and its incremental refresh (``legs/dense.py``,
``legs/dense_sync.py``) and fusion (``legs/fusion.py``) then run on this file
unchanged instead of being forked. The column mapping:

- ``kind`` is always ``"session"``;
- ``source`` holds the document's role (user | assistant | summary | tool):
  the role filter is the shared ``source_prefix`` filter, and no role is a
  prefix of another;
- ``date`` is the UTC ISO timestamp (string comparison = time order);
- ``session`` is the session id; ``transcript`` is the file path.

Uniqueness on (transcript, entry_id, part): a resumed backfill never
duplicates a row, and a row stored with its vector is never embedded again.
``part`` is "" for the entry's own text and "tool" for the tool calls an
assistant entry carries (stored apart so they can stay unembedded).

``SessionStore`` holds a ``file.SqliteFile`` made with
``session_file.SessionKind`` and a ``session_redaction.Redaction``; its
writes, searches and listings are the plain functions of
``session_writes``, ``session_search`` and ``session_browse`` over them.

A damaged file is handled like the main index's (same machinery,
``file.py`` and ``recovery.py``): moved aside to
``<name>.corrupt-<UTC stamp>``, recreated empty, never repaired, and the
damaged copy deleted once the fresh file is open.
Every source's offset goes with it, so the next backfill or sweep reads
every transcript again from its first byte; ``rebuilt_reason`` says why
until a user-facing surface shows it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from memlane.core.settings import IndexSettings, SessionsSettings
from memlane.core.types import SearchMode
from memlane.index.legs.fusion import fusion_method
from memlane.index.protocol import SearchFilters, query_vector_of
from memlane.index.session_docs import (
    BatchWrite,
    ScoredDoc,
    SessionFilters,
    SessionInfo,
    SourceState,
    StoredDoc,
    search_filters,
)
from memlane.index.sqlite import (
    session_browse,
    session_file,
    session_reads,
    session_search,
    session_writes,
)
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.notes_search import candidate_count
from memlane.index.sqlite.session_file import SessionKind
from memlane.index.sqlite.session_redaction import Redaction
from memlane.index.sqlite.session_search import Fusing, SessionLexicalLeg

if TYPE_CHECKING:
    # Never ``numpy.typing`` first at run time: while another thread is still
    # importing numpy, importing its submodule finds it half initialised.
    import numpy.typing as npt

    from memlane.index.protocol import HybridIndex

SESSIONS_SUFFIX = ".sessions.sqlite"


def sessions_path_for(index_path: Path) -> Path:
    """``<index dir>/<collection>.sessions.sqlite`` for ``<index dir>/<collection>.sqlite``."""
    name = index_path.name
    stem = name[: -len(".sqlite")] if name.endswith(".sqlite") else name
    return index_path.with_name(stem + SESSIONS_SUFFIX)


class SessionStore:
    """FTS5 + numpy hybrid search over session documents, in one SQLite file.

    Satisfies ``memlane.index.protocol.HybridIndex`` (as the notes index
    does). Holds the file (``SqliteFile`` of kind ``SessionKind``) and the
    redaction state of its texts (``Redaction``); writes, search and
    listings are the functions of ``session_writes``, ``session_search``
    and ``session_browse``; here: sources and reads."""

    def __init__(
        self,
        path: Path | str,
        index_settings: IndexSettings | None = None,
        sessions_settings: SessionsSettings | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """``redact``: the secret redaction the stored texts must have been
        through (None: texts are stored and shown as given)."""
        self.index_settings = index_settings or IndexSettings()
        self.settings = sessions_settings or SessionsSettings()
        #: Held by every ingestion pass over this store in this process (each
        #: sessions layer has its own ingestor, the store is one per process):
        #: a reindex's clear and re-read are one step no sweep can fall between.
        self.ingest_lock = threading.RLock()
        self._fuse = fusion_method(self.index_settings.fusion)
        # Why the file was recreated (``rebuilt_reason``), until a
        # user-facing surface pops it; how many times (``rebuilds``);
        # whether a full pass has read every transcript again since.
        self._kind = SessionKind()
        self._file = SqliteFile(path, SessionLexicalLeg(), self._kind)
        self._redaction = Redaction(self._file, redact)

    # -- the file's state ----------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def uri(self) -> str:
        """Where the index lives, as the notes index names its own."""
        return f"sqlite://{self.path}"

    @property
    def rebuilds(self) -> int:
        """How many times this process found the file damaged and recreated it."""
        return self._kind.rebuilds

    @property
    def reread_since_rebuild(self) -> bool:
        """Whether a full pass has read every transcript again since the last rebuild."""
        return self._kind.reread_since_rebuild

    @reread_since_rebuild.setter
    def reread_since_rebuild(self, value: bool) -> None:
        self._kind.reread_since_rebuild = value

    @property
    def rebuilt_reason(self) -> str | None:
        """Why the file was found damaged (or replaced); popped once by a surface."""
        return self._file.rebuilt_reason

    @rebuilt_reason.setter
    def rebuilt_reason(self, reason: str | None) -> None:
        self._file.rebuilt_reason = reason

    def pop_rebuilt_reason(self) -> str | None:
        """Return and clear ``rebuilt_reason`` (so the notice is shown once)."""
        return self._file.pop_rebuilt_reason()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- meta, model binding, upkeep (session_file) --------------------------------

    def meta(self) -> dict[str, Any]:
        return session_file.meta(self._file)

    def set_meta(self, values: Mapping[str, object]) -> None:
        """Write bookkeeping rows (sweeper status) without bumping the generation."""
        session_file.set_meta(self._file, values)

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind the vectors to ``model``; another model drops every vector
        (documents stay and are embedded again). True when vectors were dropped."""
        return session_file.ensure_model(self._file, model, dimension)

    def clear(self) -> None:
        """Drop every document, vector and source record (``sessions reindex``)."""
        session_file.clear(self._file)

    def checkpoint(self) -> None:
        """Fold the WAL into the file and truncate it (best effort)."""
        session_file.checkpoint(self._file)

    # -- redaction (session_redaction) ----------------------------------------------

    def rows_redacted(self) -> bool:
        """Whether every stored text went through the current redaction."""
        return self._redaction.rows_redacted()

    def redact_stored(self) -> int:
        """Rescan every stored text and rewrite the rows that hold a secret;
        returns how many rows were rewritten (``Redaction.redact_stored``)."""
        return self._redaction.redact_stored()

    # -- sources ---------------------------------------------------------------------

    def sources(self) -> dict[str, SourceState]:
        return session_reads.sources(self._file)

    def source(self, path: str) -> SourceState | None:
        return session_reads.source(self._file, path)

    def existing(self, keys: Iterable[str]) -> dict[str, bool]:
        """doc key -> has a vector, for the keys already stored."""
        return session_reads.existing(self._file, keys)

    # -- writes (session_writes) ------------------------------------------------------

    def commit(self, batch: BatchWrite) -> int:
        """Apply one batch atomically; returns the documents newly inserted.

        Existing (transcript, entry, part) rows are kept as they are (OR
        IGNORE), except that a vector in the batch fills a row stored
        without one. Transcripts in ``replace`` lose their old rows first.
        """
        return session_writes.commit(self._file, batch)

    def remove_sources(self, paths: Iterable[str]) -> int:
        return session_writes.remove_sources(self._file, paths)

    def remove_docs(self, keys: Iterable[str]) -> int:
        """Delete these documents, vectors and all; returns how many were stored."""
        return session_writes.remove_docs(self._file, keys)

    def set_vectors(self, vectors: Mapping[str, npt.ArrayLike]) -> None:
        session_writes.set_vectors(self._file, vectors)

    # -- search (session_search) --------------------------------------------------------

    def candidate_counts(self, k: int) -> tuple[int, int]:
        """(lexical, dense) candidates a search for ``k`` hits takes from each
        leg: pi-lcm-memory's lexMult/semMult under rrf fusion, else the main
        index's rule (index/legs/fusion.py)."""
        if self.index_settings.fusion == "rrf":
            return max(1, self.settings.lex_mult * k), max(1, self.settings.sem_mult * k)
        n = candidate_count(k)
        return n, n

    @property
    def rrf_k(self) -> int:
        """The RRF constant fusion uses here: the sessions layer's own
        (pi-lcm-memory's rrfK) under rrf fusion, else the main index's."""
        if self.index_settings.fusion == "rrf":
            return self.settings.rrf_k
        return self.index_settings.rrf_k

    def _fusing(self) -> Fusing:
        return Fusing(self.index_settings, self._fuse, self.rrf_k, self.candidate_counts)

    def search(
        self,
        query: str,
        vector: npt.ArrayLike | None,
        k: int,
        filters: SearchFilters | SessionFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredDoc]]:
        """Hybrid search; ``vector`` None skips the dense leg (mode lexical),
        ``lexical`` False skips the BM25 leg (mode semantic)."""
        qvec = query_vector_of(vector, lexical=lexical)
        shared = search_filters(filters)
        return session_search.search(
            self._file, self._redaction, self._fusing(), query, qvec, k, shared, lexical
        )

    def similar(
        self, key: str, k: int, filters: SearchFilters | SessionFilters | None = None
    ) -> list[ScoredDoc]:
        """Nearest neighbours of a stored document's vector, itself excluded.

        Scores are cosines clipped to [0, 1]. A document without a vector
        (tool I/O, no embedder) falls back to a lexical search on its text.
        """
        shared = search_filters(filters)
        return session_search.similar(self._file, self._redaction, self._fusing(), key, k, shared)

    # -- listings (session_browse) -------------------------------------------------------

    def messages_per_day(self) -> dict[str, int]:
        """How many documents each UTC day holds (``YYYY-MM-DD`` of their timestamp)."""
        return session_browse.messages_per_day(self._file)

    def recent_sessions(
        self, n: int, exclude: str | None = None, *, offset: int = 0
    ) -> list[SessionInfo]:
        """The ``n`` sessions with the latest messages, newest first (after
        skipping ``offset`` of them)."""
        return session_browse.recent_sessions(self._file, self._redaction, n, exclude, offset)

    def sessions_on_day(self, day: str, n: int, *, offset: int = 0) -> list[SessionInfo]:
        """The sessions with messages on UTC *day*, latest first; ``first_at``,
        ``last_at`` and ``messages`` are that day's."""
        return session_browse.sessions_on_day(self._file, self._redaction, day, n, offset)

    def transcript_count(self, transcript: str) -> int:
        """How many documents of *transcript* are stored."""
        return session_browse.transcript_count(self._file, transcript)

    def transcript_format(self, transcript: str) -> str | None:
        """The format the sessions layer read *transcript* as (the agent it came from)."""
        return session_browse.transcript_format(self._file, transcript)

    def transcript_page(self, transcript: str, limit: int, offset: int = 0) -> list[StoredDoc]:
        """*limit* documents of *transcript* in stored order, from *offset*."""
        return session_browse.transcript_page(
            self._file, self._redaction, transcript, limit, offset
        )

    # -- reads ---------------------------------------------------------------------------

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(doc key, text) of documents that should have a vector and do not."""
        return session_reads.missing_vectors(self._file, self._redaction, limit)

    def count(self) -> int:
        return session_reads.count(self._file)

    def prepare_search(self, *, bulk: bool = True) -> None:
        self._file.prepare_dense(load=bulk)

    def get(self, key: str) -> StoredDoc | None:
        return session_reads.get(self._file, self._redaction, key)

    def find_entry(self, entry_id: str) -> list[StoredDoc]:
        """Documents of a transcript entry id (a message id as pi/Claude wrote it)."""
        return session_reads.find_entry(self._file, self._redaction, entry_id)

    def docs_of(self, transcript: str) -> list[StoredDoc]:
        return session_reads.docs_of(self._file, self._redaction, transcript)

    def stats(self) -> dict[str, Any]:
        return session_reads.stats(self._file)


if TYPE_CHECKING:
    # mypy checks here that the sessions index satisfies the index protocol.
    def _satisfies_protocol(store: SessionStore) -> HybridIndex[ScoredDoc, StoredDoc]:
        return store
