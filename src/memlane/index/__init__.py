"""Index backends behind one protocol (``base.IndexBackend``), fusion, state."""

from memlane.index.base import (
    DimensionMismatchError,
    FileRecord,
    IndexBackend,
    IndexBusyError,
    IndexedChunk,
    ScoredChunk,
    SearchFilters,
)

__all__ = [
    "DimensionMismatchError",
    "FileRecord",
    "IndexBackend",
    "IndexBusyError",
    "IndexedChunk",
    "ScoredChunk",
    "SearchFilters",
]
