"""``ProjectMemory``: what the parts of the engine may use of a project's memory.

``Memory`` (engine/project.py) is the composition root: it calls forget,
compaction, dream, the sessions layer, the status report and the search
router. Those in turn need the memory they work on — its scope, settings,
clock, index, embedder and sync. Typed against ``Memory`` itself, every such
pair would be an import cycle (project → service → project). They are typed
against this protocol instead, a leaf that imports nothing of the engine's
services; ``Memory`` satisfies it structurally, and mypy checks that at every
call that hands a ``Memory`` over.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.config import Config
    from memlane.core.scope import Scope
    from memlane.core.settings import IndexSettings
    from memlane.core.types import (
        Anchor,
        Entry,
        SearchKind,
        SearchMode,
        SearchOrder,
        SearchResult,
        SearchScope,
    )
    from memlane.engine.shared.embedding import Embedding
    from memlane.engine.shared.fresh import FreshWrites
    from memlane.engine.shared.parts import SharedParts
    from memlane.engine.shared.results import IndexReport, Progress
    from memlane.engine.shared.scale import ModelScale
    from memlane.index.protocol import NotesIndex


class MemoryInternals(Protocol):
    """What the engine's services use of a memory beyond its API
    (``Memory.internals``, engine/project.py; docs/python-api.md)."""

    @property
    def catch_up_char_limit(self) -> int | None: ...

    @property
    def parts(self) -> SharedParts: ...

    @property
    def fresh(self) -> FreshWrites: ...

    def note_written(self, *paths: str | Path) -> None: ...

    @property
    def index_path(self) -> Path: ...

    @property
    def model_scale(self) -> ModelScale: ...

    @model_scale.setter
    def model_scale(self, measured: ModelScale) -> None: ...

    @property
    def index_settings(self) -> IndexSettings: ...

    def require_store(self) -> None: ...

    def catch_up(self, char_limit: int | None = None) -> IndexReport | None: ...

    def min_score(self, chosen: float | None = None) -> float: ...


class ProjectMemory(Protocol):
    """One project's memory as its services see it (``Memory`` implements it)."""

    scope: Scope
    config: Config
    clock: Clock
    notices: list[str]

    @property
    def internals(self) -> MemoryInternals: ...

    @property
    def embedding(self) -> Embedding: ...

    @property
    def collection(self) -> str: ...

    @property
    def index(self) -> NotesIndex: ...

    def fork(self, *, catch_up_char_limit: int | None = None) -> ProjectMemory: ...

    def close(self) -> None: ...

    def write(
        self, text: str, anchor: Anchor | None = None, *, now: datetime | None = None
    ) -> Entry: ...

    def sync(
        self,
        progress: Progress | None = None,
        *,
        operation: str = "index",
        quiet_when_idle: bool = False,
    ) -> IndexReport: ...

    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        kind: SearchKind | None = None,
        scope: SearchScope = "project",
        after: str | None = None,
        before: str | None = None,
        session: str | None = None,
        source_prefix: str | None = None,
        mode: SearchMode = "hybrid",
        sync: bool = True,
        min_score: float | None = None,
        order: SearchOrder = "relevance",
    ) -> SearchResult: ...


#: How a service opens another project's memory (cross-repo recall) without
#: importing ``Memory``: the composition root passes ``Memory.open``.
OpenMemory = Callable[[Path], ProjectMemory]
