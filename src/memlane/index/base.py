"""The index backend protocol and the value types it trades in.

The engine hands chunks (from the store) and vectors (from the embedder) to
a backend; the backend never reads markdown and never embeds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from memlane.core.errors import MemlaneError
from memlane.core.types import Chunk, Kind, SearchMode, context_of


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


class IndexBackend(Protocol):
    """One collection's derived index."""

    @property
    def uri(self) -> str:
        """Where the index lives (recorded in the index state file)."""
        ...

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind the index to an embedding model.

        When the stored model differs, every chunk is dropped (never mixed
        vector spaces) and True is returned so the caller re-indexes.
        """
        ...

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

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(chunk_hash, embedding text) of chunks stored without a vector."""
        ...

    def set_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store (or overwrite) the vectors of existing chunks; unknown hashes are ignored."""
        ...

    def count(self) -> int: ...

    def stats(self) -> dict[str, Any]:
        """Counts for status: at least ``chunks``, ``vectors`` and ``files``."""
        ...

    def get(self, chunk_hash: str) -> Chunk | None: ...

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        filters: SearchFilters | None = None,
        *,
        lexical: bool = True,
    ) -> tuple[SearchMode, list[ScoredChunk]]:
        """Hybrid search; with ``vector`` None the dense leg is skipped, with
        ``lexical`` False the BM25 leg (mode semantic)."""
        ...

    def close(self) -> None: ...
