"""Indexes behind one protocol (``protocol.HybridIndex``; the notes index's
``protocol.IndexBackend``): SQLite backends (``sqlite/``), the Milvus notes
index (``milvus/``), the search legs
(``legs/``), the memsearch state file (``state``)."""

from memlane.index.protocol import (
    DimensionMismatchError,
    FileRecord,
    HybridIndex,
    IndexBackend,
    IndexBusyError,
    IndexedChunk,
    IndexSchemaError,
    IndexUnavailableError,
    NotesIndex,
    ScoredChunk,
    SearchFilters,
)

__all__ = [
    "DimensionMismatchError",
    "FileRecord",
    "HybridIndex",
    "IndexBackend",
    "IndexBusyError",
    "IndexSchemaError",
    "IndexUnavailableError",
    "IndexedChunk",
    "NotesIndex",
    "ScoredChunk",
    "SearchFilters",
]
