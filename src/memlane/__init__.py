"""memlane: long-term memory for coding agents.

The library surface (docs/python-api.md): ``Memory`` and ``Session``, the
result types their calls return and the errors they raise, all importable
from here::

    from memlane import Memory, MemlaneError

Every name is loaded on first use (PEP 562): ``import memlane`` is on the
start path of every host (a hook, ``memlane mcp``) and must import nothing
but this module (not even ``__future__``).
"""

TYPE_CHECKING = False  # typing unimported: see above
if TYPE_CHECKING:
    from typing import Any

    from memlane.core.errors import (
        ConfigError,
        ConfigSyntaxError,
        ConflictError,
        DiskFullError,
        EmbedderError,
        IndexCorruptError,
        LlmError,
        MemlaneError,
        NotFoundError,
        ScopeError,
        StoreCommandError,
        StoreError,
    )
    from memlane.core.types import (
        Anchor,
        Band,
        Chunk,
        Entry,
        Exchange,
        Hit,
        Kind,
        SearchKind,
        SearchMode,
        SearchOrder,
        SearchResult,
        SearchScope,
        Section,
    )
    from memlane.core.version import __version__
    from memlane.engine.live.session import Session
    from memlane.engine.live.state import Flush, Injection, Queued
    from memlane.engine.migrate import MigrationReport
    from memlane.engine.project import Memory
    from memlane.engine.shared.embedding import Embedding
    from memlane.engine.shared.results import IndexReport, Status
    from memlane.store.forget import Removed
    from memlane.transcripts.model import Transcript, Turn

#: Each exported name → the module that defines it.
_HOME = {
    "__version__": "memlane.core.version",
    "Memory": "memlane.engine.project",
    "Session": "memlane.engine.live.session",
    "Embedding": "memlane.engine.shared.embedding",
    # what the calls return
    "Anchor": "memlane.core.types",
    "Chunk": "memlane.core.types",
    "Entry": "memlane.core.types",
    "Exchange": "memlane.core.types",
    "Hit": "memlane.core.types",
    "SearchResult": "memlane.core.types",
    "Section": "memlane.core.types",
    "Transcript": "memlane.transcripts.model",
    "Turn": "memlane.transcripts.model",
    "Removed": "memlane.store.forget",
    "IndexReport": "memlane.engine.shared.results",
    "Status": "memlane.engine.shared.results",
    "MigrationReport": "memlane.engine.migrate",
    "Injection": "memlane.engine.live.state",
    "Queued": "memlane.engine.live.state",
    "Flush": "memlane.engine.live.state",
    # the values of the search arguments and of a hit's fields
    "Band": "memlane.core.types",
    "Kind": "memlane.core.types",
    "SearchKind": "memlane.core.types",
    "SearchMode": "memlane.core.types",
    "SearchOrder": "memlane.core.types",
    "SearchScope": "memlane.core.types",
    # what they raise
    "MemlaneError": "memlane.core.errors",
    "ScopeError": "memlane.core.errors",
    "StoreCommandError": "memlane.core.errors",
    "ConfigError": "memlane.core.errors",
    "ConfigSyntaxError": "memlane.core.errors",
    "StoreError": "memlane.core.errors",
    "DiskFullError": "memlane.core.errors",
    "NotFoundError": "memlane.core.errors",
    "ConflictError": "memlane.core.errors",
    "EmbedderError": "memlane.core.errors",
    "IndexCorruptError": "memlane.core.errors",
    "LlmError": "memlane.core.errors",
}

__all__ = [
    "Anchor",
    "Band",
    "Chunk",
    "ConfigError",
    "ConfigSyntaxError",
    "ConflictError",
    "DiskFullError",
    "EmbedderError",
    "Embedding",
    "Entry",
    "Exchange",
    "Flush",
    "Hit",
    "IndexCorruptError",
    "IndexReport",
    "Injection",
    "Kind",
    "LlmError",
    "MemlaneError",
    "Memory",
    "MigrationReport",
    "NotFoundError",
    "Queued",
    "Removed",
    "ScopeError",
    "SearchKind",
    "SearchMode",
    "SearchOrder",
    "SearchResult",
    "SearchScope",
    "Section",
    "Session",
    "Status",
    "StoreCommandError",
    "StoreError",
    "Transcript",
    "Turn",
    "__version__",
]


def __getattr__(name: str) -> "Any":
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(home), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
