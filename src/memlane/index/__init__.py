"""Indexes behind one protocol (``protocol.HybridIndex``; the notes index's
``protocol.IndexBackend``): SQLite backends (``sqlite/``), the Milvus notes
index (``milvus/``), the search legs
(``legs/``), the memsearch state file (``state``).

The protocol's names are loaded on first use, not with the package: the
protocol imports numpy, and a module that only needs ``index/backends.py``
(where an index lives) must not import numpy as a side effect. A process
whose threads import numpy at the same moment can see it half initialised
(``ImportError: ... partially initialized module``), so numpy is imported
where it is needed, not by every importer of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memlane.index import protocol

        return getattr(protocol, name)
    raise AttributeError(f"module 'memlane.index' has no attribute {name!r}")
