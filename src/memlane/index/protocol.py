"""The index protocol and the value types it trades in.

``HybridIndex`` is the one protocol every index satisfies: the notes index
(``sqlite.notes.SqliteIndex``), the sessions index
(``sqlite.sessions.SessionStore``) and the Milvus notes index
(``milvus.notes.MilvusIndex``). It covers
what the engine asks of any index: bind a model, search (BM25 + vectors,
fused, scored in [0, 1]), read one item, count, stats, fill the vectors
still missing, close. ``IndexBackend`` adds what the notes indexer needs to
keep a collection in step with its markdown files.

The engine hands chunks (from the store) and vectors (from the embedder) to
a backend; the backend never reads markdown and never embeds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from memlane.core.errors import MemlaneError
from memlane.core.in_flight import InFlight
from memlane.core.settings import IndexSettings
from memlane.core.types import Chunk, Kind, SearchMode, context_of

#: A pass that stored at least this many vectors is a bulk write: it ends
#: with ``prepare_search`` so the next search pays nothing for it. A smaller
#: pass ends with ``prepare_search(bulk=False)``: a process that searches
#: (the warm engine) folds a grown tail into a new vector file on the
#: writer's thread, not in the next search.
BULK_WRITE_VECTORS = 4096


class DimensionMismatchError(MemlaneError, ValueError):
    """A vector's length differs from the dimension the index is bound to.

    Raised before anything is written, so a misconfigured embedder can never
    mix vector spaces in one collection.
    """


class IndexBusyError(MemlaneError):
    """Another process held the index write lock past the busy timeout.

    Callers degrade (skip this index pass, retry later); nothing is lost
    because the index is rebuildable from markdown.
    """


class IndexUnavailableError(MemlaneError):
    """The index backend cannot be reached or used right now: an unreachable
    server, a refused token, a database path that is not one.

    Defined here, not in the backend, so the engine can catch it without
    importing the backend's client library. Search degrades to "the index is
    unavailable"; nothing written to the markdown store is lost.
    """


class IndexSchemaError(IndexUnavailableError):
    """An existing collection's schema is not one memlane can use (another
    tool's collection under the same name)."""


@dataclass(frozen=True)
class FileRecord:
    """What the index remembers about a source file to skip unchanged ones."""

    source: str  # absolute path
    mtime_ns: int
    size: int
    digest: str  # sha256 hex of the file bytes


@dataclass(frozen=True)
class IndexedChunk:
    """A chunk plus the metadata the filters need."""

    chunk: Chunk
    kind: Kind = "journal"
    date: str | None = None  # "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM", compared as strings
    session: str | None = None  # the session id of the chunk's first anchor


@dataclass(frozen=True)
class SearchFilters:
    kind: Kind | None = None
    source_prefix: str | None = None
    after: str | None = None  # inclusive lower bound on IndexedChunk.date
    before: str | None = None  # exclusive upper bound on IndexedChunk.date
    session: str | None = None

    def is_empty(self) -> bool:
        return not (self.kind or self.source_prefix or self.after or self.before or self.session)


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    score: float  # in [0, 1]; calibrated relevance under the evidence fusion


def file_contexts(chunks: Iterable[IndexedChunk]) -> dict[str, str]:
    """chunk hash -> context, for one file's chunks in file order: the start
    of the previous chunk when both belong to the same anchor session, else
    "": what the index's BM25 context column holds (the embedder never sees
    it: a note is embedded as it stands, ADR 0010)."""
    out: dict[str, str] = {}
    previous: IndexedChunk | None = None
    for item in chunks:
        same = previous is not None and previous.session == item.session
        out[item.chunk.chunk_hash] = context_of(previous.chunk.content) if same and previous else ""
        previous = item
    return out


#: A search's query vector: given, absent (no dense leg), or still being
#: computed (an index that runs its lexical leg first waits for it only
#: then; see ``NotesIndex.embeds_beside_lexical``).
QueryVector = npt.ArrayLike | InFlight[Any] | None


def query_vector_of(vector: QueryVector, *, lexical: bool) -> npt.NDArray[np.float32] | None:
    """The query vector as every index searches with it (float32, flat), or
    None; a semantic-only search (``lexical`` False) must have one. A vector
    in flight is waited for here."""
    if isinstance(vector, InFlight):
        vector = vector.result()
    qvec = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)
    if not lexical and qvec is None:
        raise ValueError("a semantic-only search needs a query vector")
    return qvec


def search_mode(lexical: bool, dense: bool) -> SearchMode:
    """What a search that runs these legs is called."""
    return "semantic" if not lexical else "hybrid" if dense else "lexical"


class Scored(Protocol):
    """A search hit: whatever it holds, a calibrated score in [0, 1]."""

    @property
    def score(self) -> float: ...


HitT = TypeVar("HitT", bound=Scored)
ItemT = TypeVar("ItemT", covariant=True)


@runtime_checkable
class HybridIndex(Protocol[HitT, ItemT]):
    """One derived index of one kind of memory: items stored with their
    text (BM25) and, once embedded, their vector (cosine).

    ``HitT`` is what a search returns (``ScoredChunk``, ``ScoredDoc``),
    ``ItemT`` what ``get`` reads (``Chunk``, ``StoredDoc``). Filters are
    ``SearchFilters``: a sessions index reads a role as ``source_prefix``.
    """

    @property
    def uri(self) -> str:
        """Where the index lives (recorded in the index state file)."""
        ...

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind the index to an embedding model.

        When the stored model (or dimension) differs, the old vectors go
        (never mixed vector spaces) and True is returned so the caller
        embeds again; what else goes is the backend's (the notes index drops
        its chunks and re-indexes from markdown).
        """
        ...

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(key, embedding text) of items that should have a vector and do not."""
        ...

    def set_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store the vectors of existing items; unknown keys are ignored."""
        ...

    def count(self) -> int:
        """How many items are stored."""
        ...

    def prepare_search(self, *, bulk: bool = True) -> None:
        """After a write: do now what the next search would otherwise pay
        for (the SQLite backend reads new vectors into its matrix and
        rewrites its vector file when due; Milvus has nothing to do).
        ``bulk=False`` (a small pass) keeps in step only what this process
        already holds: one that never searched loads nothing."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counts and sizes for ``memlane status``: at least ``path`` and ``model``."""
        ...

    def get(self, key: str, /) -> ItemT | None:
        """The item stored under ``key`` (a chunk hash, a document key)."""
        ...

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        filters: SearchFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[HitT]]:
        """Hybrid search; with ``vector`` None the dense leg is skipped, with
        ``lexical`` False the BM25 leg (mode semantic)."""
        ...

    def close(self) -> None: ...


def chunks_of(record: FileRecord, chunks: Iterable[IndexedChunk]) -> dict[str, IndexedChunk]:
    """*chunks* by hash, the first of each kept, every one checked to belong to
    ``record.source``: what ``replace_file`` writes, on either backend (a
    ``ValueError`` names a chunk of another file)."""
    wanted: dict[str, IndexedChunk] = {}
    for item in chunks:
        if item.chunk.source != record.source:
            raise ValueError(
                f"chunk {item.chunk.chunk_hash} has source {item.chunk.source!r}, "
                f"not {record.source!r}"
            )
        wanted.setdefault(item.chunk.chunk_hash, item)
    return wanted


@runtime_checkable
class IndexBackend(HybridIndex[ScoredChunk, Chunk], Protocol):
    """The notes index: one collection's chunks, kept in step with its
    markdown files by the indexer."""

    def files(self) -> dict[str, FileRecord]: ...

    def chunk_hashes(self, source: str) -> set[str]: ...

    def chunk_contexts(self, source: str) -> dict[str, str]:
        """chunk hash -> the BM25 context stored for it (``file_contexts``)."""
        ...

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[IndexedChunk],
        vectors: Mapping[str, np.ndarray],
    ) -> int:
        """Atomically make ``chunks`` the whole content of ``record.source``.

        Rows of that source whose hash is not in ``chunks`` are deleted; new
        ones are inserted with their vector when ``vectors`` has it (else no
        vector yet). Returns the number of chunks newly inserted.
        """
        ...

    def remove_files(self, sources: Iterable[str]) -> int:
        """Drop every chunk and file record of ``sources``; returns chunks removed."""
        ...


@runtime_checkable
class NotesIndex(IndexBackend, Protocol):
    """What the engine holds as a project's notes index, on any backend
    (``sqlite.notes.SqliteIndex``, ``milvus.notes.MilvusIndex``)."""

    #: Set when the index found it had to start over (a damaged file, a
    #: collection dropped elsewhere); the engine re-indexes and says so once.
    rebuilt_reason: str | None
    #: The search settings; the engine replaces them when it learns the
    #: embedding model's cosine scale (engine/calibration).
    settings: IndexSettings

    @property
    def backend(self) -> str:
        """ "sqlite" or "milvus"."""
        ...

    @property
    def embeds_beside_lexical(self) -> bool:
        """True when ``search`` runs its lexical leg before it needs the query
        vector: a caller gains by passing the vector in flight (``InFlight``)."""
        ...

    def pop_rebuilt_reason(self) -> str | None: ...

    def search(
        self,
        query: str,
        vector: QueryVector,
        k: int,
        filters: SearchFilters | None = None,
        *,
        lexical: bool = True,
        reach: int | None = None,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        """``HybridIndex.search``; ``reach``: the legs weigh as many candidates
        as for a search of that many hits (a caller that fetches a few extra
        hits to refine them keeps the cost of the search it answers);
        ``vector`` may be in flight, and has been waited for on return."""
        ...

    def vector_of(self, chunk_hash: str) -> np.ndarray | None: ...

    def get_indexed(self, chunk_hash: str) -> IndexedChunk | None: ...

    def vectors_of(self, chunk_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those without one are left out)."""
        ...

    def superseders(self, content_hashes: Sequence[str]) -> dict[str, Chunk]:
        """Old content hash -> the chunk whose ``supersedes`` marker names it."""
        ...

    def export(self, batch: int = 512) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
        """Every stored chunk with its vector (None when it has none yet), in batches."""
        ...

    def vector_space(self) -> tuple[Any, Any]:
        """(model, dimension) the stored vectors were made with (None when unknown)."""
        ...
