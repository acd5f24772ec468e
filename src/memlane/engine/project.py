"""``Memory``: one project's memory, the object every host and the CLI call.

It ties the pieces together in the one allowed direction: engine → store,
index, embed → core. Heavy parts (the embedding model, the index file) are
opened lazily, once, on first use.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.config import Config, load_config
from memlane.core.errors import (
    StoreError,
)
from memlane.core.scope import Scope, resolve_scope
from memlane.core.types import (
    Anchor,
    Chunk,
    Entry,
    SearchKind,
    SearchMode,
    SearchOrder,
    SearchResult,
    SearchScope,
    Section,
)
from memlane.engine.shared.parts import SharedParts
from memlane.engine.shared.results import IndexReport, Progress, Status

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memlane.core.settings import IndexSettings
    from memlane.engine.journal.indexer import Indexer
    from memlane.engine.shared.embedding import Embedding
    from memlane.engine.shared.fresh import FreshWrites
    from memlane.engine.shared.scale import ModelScale
    from memlane.index.protocol import NotesIndex
    from memlane.llm.base import LLM
    from memlane.store.damage import DamagedLine
    from memlane.store.forget import Removed
    from memlane.store.repair import SetAside
    from memlane.transcripts.model import Transcript

SESSION_ID_ENV = "MEMLANE_SESSION_ID"
TRANSCRIPT_ENV = "MEMLANE_TRANSCRIPT"
DEFAULT_SESSION_ID = "cli"
NO_TRANSCRIPT = "none"


class Memory:
    """One project's memory: write, index, search, expand, status."""

    def __init__(
        self,
        scope: Scope,
        config: Config,
        *,
        clock: Clock = SYSTEM_CLOCK,
        catch_up_char_limit: int | None = None,
        _parts: SharedParts | None = None,
    ) -> None:
        self.scope = scope
        self.config = config
        # The one "now" of this memory: entries, compaction, dream and the
        # index state all read it, so they agree on the day (core/clock.py).
        self.clock = clock
        # A bad setting is said by every command that opens the memory.
        self.notices: list[str] = [*config.problems, *config.notices]
        if scope.worktree is not None and scope.worktree.problem:
            self.notices.append(scope.worktree.problem)  # memory not shared: say so (ADR 0035)
        self._catch_up_char_limit = catch_up_char_limit  # internals.catch_up_char_limit
        self._parts = _parts or SharedParts()
        self._index: NotesIndex | None = None
        self._model_scale: ModelScale | None = None
        self._lender: Memory | None = None

    def fork(self, *, catch_up_char_limit: int | None = None) -> Memory:
        """Another handle on the same memory for another thread.

        An index connection belongs to one thread, so each worker of a
        session (indexer, auto-context search) gets its own handle; the
        embedder (one model load per process), the daily-file writer (one
        ``## Session`` decision per process) and the record of fresh writes
        (``fresh``) are shared. ``catch_up_char_limit``: see ``internals.catch_up``.
        """
        return Memory(
            self.scope,
            self.config,
            clock=self.clock,
            catch_up_char_limit=catch_up_char_limit,
            _parts=self._parts,
        )

    @property
    def internals(self) -> MemoryInternals:
        """What memlane's own hosts and the engine's services use beyond the API:
        not for programs embedding memlane, may change between versions."""
        return MemoryInternals(self)

    @classmethod
    def open(
        cls,
        cwd: str | Path | None = None,
        config: Config | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> Memory:
        scope = resolve_scope(cwd)
        return cls(scope, config or load_config(scope.repository_dir), clock=clock)

    # -- parts, opened lazily -------------------------------------------------

    @property
    def embedding(self) -> Embedding:
        """The embedder, as one object: ``embedder`` (loads on first use), ``ready``,
        ``problem``, ``warm()``, ``query_vector()`` (engine/shared/embedding.py)."""
        from memlane.engine.shared.embedding import Embedding

        return Embedding(self._parts.embedder_state, self.config.embedding)

    @property
    def collection(self) -> str:
        """The index collection: ``index.collection``, else the project's derived name."""
        return self.config.index.collection or self.scope.collection

    @property
    def index(self) -> NotesIndex:
        """The notes index on the configured backend (engine/index_backend.py)."""
        if self._lender is not None:
            return self._lender.index
        if self._index is None:
            from memlane.engine.index_backend import open_notes_index

            self._index = open_notes_index(self.scope, self.internals.index_settings)
        return self._index

    def close(self) -> None:
        if self._lender is None and self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- write ------------------------------------------------------------------

    def write(
        self,
        text: str,
        anchor: Anchor | None = None,
        *,
        now: datetime | None = None,
        supersedes: Sequence[str] = (),
    ) -> Entry:
        """Append one timestamped, anchored entry to today's daily file.

        Secrets are redacted and ``<private>`` blocks dropped first: nothing
        secret is ever written to the store, whoever writes. ``supersedes``
        names the chunk hashes of memories this one corrects (recall/trust.py).
        """
        from memlane.engine.recall.trust import supersedes_markers
        from memlane.store.daily import new_entry_id
        from memlane.store.redaction import redaction_for_storage

        redaction = redaction_for_storage(text)
        text = redaction.text
        if supersedes:
            text = "\n".join([text.rstrip(), *supersedes_markers(self, supersedes)])

        if anchor is None:
            anchor = Anchor(
                session=os.environ.get(SESSION_ID_ENV) or DEFAULT_SESSION_ID,
                turn=new_entry_id(),
                transcript=os.environ.get(TRANSCRIPT_ENV) or NO_TRANSCRIPT,
            )
        try:
            text.encode("utf-8")
        except UnicodeError:
            raise StoreError(
                "the text is not valid UTF-8, so it was not written",
                "re-encode the input as UTF-8 and try again",
            ) from None
        entry = self._parts.writer().append(
            self.scope.store, text, anchor, now or self.clock.now(), anchor.session
        )
        self._parts.fresh.note((entry.path,))
        return replace(entry, redactions=redaction.count)

    # -- index ------------------------------------------------------------------

    def sync(
        self,
        progress: Progress | None = None,
        *,
        operation: str = "index",
        quiet_when_idle: bool = False,
    ) -> IndexReport:
        """Index what changed in the store since the last run (journal/sync.py)."""
        from memlane.engine.journal.sync import sync

        return sync(self, progress, operation=operation, quiet_when_idle=quiet_when_idle)

    def reindex(self, progress: Progress | None = None) -> IndexReport:
        """Drop the derived index and rebuild it from the markdown alone."""
        from memlane.engine.index_backend import reset_notes_index

        if self._lender is not None:
            return self._lender.reindex(progress)
        index, self._index = self._index, None
        reset_notes_index(self.scope, self.config.index, index)
        return self.sync(progress, operation="reindex")

    # -- recall -------------------------------------------------------------------

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
    ) -> SearchResult:
        """Recall: the top-k hits for a query, through the one search router.

        ``kind``: "journal", "topic" (none: both, the notes), "session" (the
        sessions layer) or "all" (notes and sessions merged by score);
        ``scope`` "all": every project's notes. ``mode``: "hybrid" (BM25 +
        dense), "lexical" (no model load) or "semantic" (dense only; an
        error without an embedder). Only hits scoring ``min_score`` or more
        are returned (default ``search.min_score``). ``sync``: index the
        whole store first (False in a live session, whose indexer keeps the
        index current: only this process's fresh writes are indexed first).
        ``order`` "newest": by date instead of score. Each hit is dated and
        banded, outdated ones marked (recall/trust.py). See engine/recall/router.py.
        """
        from memlane.engine.recall.router import search
        from memlane.engine.shared.request import SearchRequest

        request = SearchRequest(
            query,
            k,
            kind=kind,
            scope=scope,
            after=after,
            before=before,
            session=session,
            source_prefix=source_prefix,
            mode=mode,
            sync=sync,
            min_score=min_score,
            order=order,
        )
        return search(self, request).result

    def similar(self, chunk_hash: str, k: int = 10) -> SearchResult:
        """More like this chunk: nearest stored vectors, the chunk itself excluded."""
        from memlane.engine.recall.expand import similar

        return similar(self, chunk_hash, k)

    def expand(self, chunk_hash: str) -> Section:
        """L2 recall: the whole heading section a chunk came from, with its anchor."""
        from memlane.engine.recall.expand import expand

        return expand(self, chunk_hash)

    def transcript(
        self,
        path: str | Path,
        turn: str | None = None,
        *,
        context: int | None = None,
        limit: int | None = None,
    ) -> Transcript:
        """L3 recall: the turns around an anchored entry; a pure file read."""
        from memlane.transcripts import read_transcript

        settings = self.config.session
        return read_transcript(
            path,
            turn,
            context=settings.transcript_context if context is None else context,
            limit=settings.transcript_limit if limit is None else limit,
            turn_char_cap=settings.turn_char_cap,
        )

    def forget(
        self, chunk_hash: str | None = None, date: str | None = None, time: str | None = None
    ) -> Removed:
        """Delete one entry or compact block by chunk hash or (date, time).

        Then every derived copy of the index that could still hold its text
        goes too: a damaged index moved aside by a rebuild (and its -wal)
        of this collection's markdown or sessions index (docs/hardening/copies.md).
        """
        from memlane.core.faults import step
        from memlane.engine.journal.maintenance import forget

        removed = forget(self, chunk_hash=chunk_hash, date=date, time=time)
        self._purge_damaged_copies()
        step("forget.purged")
        return removed

    def _purge_damaged_copies(self) -> list[Path]:
        """Delete the moved-aside damaged copies of this collection's indexes."""
        from memlane.index.sqlite.recovery import remove_damaged_copies
        from memlane.index.sqlite.sessions import sessions_path_for

        index_path = self.internals.index_path
        purged = remove_damaged_copies(index_path)
        purged += remove_damaged_copies(sessions_path_for(index_path))
        return purged

    def compact(self, source: str | None = None, llm: LLM | None = None) -> str:
        """Memory compaction with ``llm`` (default: the configured ``[llm]``)."""
        from memlane.engine.journal.maintenance import compact

        if llm is None:
            from memlane.llm.factory import make_llm

            llm = make_llm(self.config.llm, purpose="compact", clock=self.clock)
        return compact(self, llm, source=source)

    def chunks_of(self, path: Path) -> list[Chunk]:
        """How a markdown file is chunked (with this model's chunk hashes).

        Damaged lines are left out, as the indexer leaves them out; each one
        is named in ``notices``.
        """
        from memlane.engine.reports import describe_damage
        from memlane.store.chunker import chunk_markdown
        from memlane.store.section import read_markdown_checked

        real = path.expanduser().resolve()
        checked = read_markdown_checked(real)
        self.notices.extend(f"left out damaged {describe_damage(d)}" for d in checked.damaged)
        return chunk_markdown(checked.text, str(real), self.embedding.model)

    # -- status ---------------------------------------------------------------------

    def damaged_lines(self) -> list[DamagedLine]:
        """Every damaged line of the store's markdown files (store/damage.py)."""
        from memlane.store.damage import damage_in
        from memlane.store.layout import list_markdown_files

        return damage_in(self.scope.store, list_markdown_files(self.scope.store))

    def set_aside_damage(self) -> list[SetAside]:
        """Move every damaged line into ``<file>.damaged``, then index those files.

        What moves is exactly what ``damaged_lines`` lists plus the headings
        left without text (store/repair.py); the intact entries stay.
        """
        from memlane.store.layout import list_markdown_files
        from memlane.store.repair import set_aside_damage

        moved = set_aside_damage(
            self.scope.store, list_markdown_files(self.scope.store), self.clock.now()
        )
        if moved:
            self.sync()
        return moved

    def status(
        self, *, probe: bool = False, host_llm: bool = False, host: str | None = None
    ) -> Status:
        """The doctor's report. ``probe`` loads the embedder to see that it works;
        ``host`` (a session's) decides what ``llm.provider = auto`` means."""
        from memlane.engine.status import project_status

        return project_status(self, probe=probe, host_llm=host_llm, host=host)


class MemoryInternals:
    """``Memory.internals``: what memlane's own hosts and the engine's services
    (through ``engine/shared/ports.py``) use of a memory beyond its API.

    A view on one handle, made on each access. Not for programs embedding
    memlane (docs/python-api.md): it may change between versions.
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory  # its private state is read here, in its own module

    def lend(self) -> Memory:
        """This handle's index for code on its thread that closes what it opens (a
        CLI command in the engine): own notices; closing leaves the index open."""
        memory = self._memory
        view = memory.fork(catch_up_char_limit=memory._catch_up_char_limit)
        view._lender = memory
        return view

    @property
    def catch_up_char_limit(self) -> int | None:
        """A search without a full sync first indexes this process's fresh writes
        (``catch_up``); a handle that answers under a deadline (auto-context)
        skips that when it would embed more text than this."""
        return self._memory._catch_up_char_limit

    @property
    def parts(self) -> SharedParts:
        """What every handle of this memory shares (engine/shared/parts.py)."""
        return self._memory._parts

    @property
    def fresh(self) -> FreshWrites:
        """The store files this process wrote since they were last indexed."""
        return self._memory._parts.fresh

    def note_written(self, *paths: str | Path) -> None:
        """Store files were just written or removed: the next search indexes them first.

        ``Memory.write`` notes its daily file itself; other writers of the
        store (topic ``add``/``remove``) call this.
        """
        self._memory._parts.fresh.note(paths)

    @property
    def index_path(self) -> Path:
        """The SQLite notes index file (the sessions index sits beside it on any backend)."""
        from memlane.engine.index_backend import sqlite_index_path

        memory = self._memory
        return sqlite_index_path(memory.config.index, memory.collection)

    @property
    def model_scale(self) -> ModelScale:
        """The embedding model's cosine scale and where it came from (engine/calibration)."""
        memory = self._memory
        if memory._model_scale is None:
            from memlane.engine.calibration import load_scale

            memory._model_scale = load_scale(memory.config.embedding)
        return memory._model_scale

    @model_scale.setter
    def model_scale(self, measured: ModelScale) -> None:
        memory = self._memory
        memory._model_scale = measured
        if memory._index is not None and memory._lender is None:
            index = memory._index
            index.settings = replace(index.settings, cosine_scale=measured.scale)

    @property
    def index_settings(self) -> IndexSettings:
        """``[index]`` with the model's cosine scale, as every index of this project searches."""
        config = self._memory.config
        if config.embedding.provider.strip().lower() == "none":
            return config.index
        return replace(config.index, cosine_scale=self.model_scale.scale)

    def require_store(self) -> None:
        """Raise a clear error when this project has no memory store yet."""
        scope = self._memory.scope
        if not scope.store.is_dir():
            why = f" ({scope.worktree.reason})" if scope.worktree else ""
            raise StoreError(
                f"no memory store at {scope.store}{why}",
                "write a first memory with `memlane write TEXT`, or run memlane in "
                "(or with -C) the project you mean",
            )

    def indexer(self) -> Indexer:
        """An ``Indexer`` over this memory's store and this handle's index."""
        from memlane.engine.journal.indexer import indexer_of

        return indexer_of(self._memory)

    def catch_up(self, char_limit: int | None = None) -> IndexReport | None:
        """Index only the files this process wrote since they were last indexed.

        What a search runs first when a session's debounced indexer keeps
        the index current: no walk of the store, None at once when nothing
        was written; with ``char_limit``, None (the work left to the
        indexer) when it would embed more characters than that. See
        ``engine/shared/fresh.py``.
        """
        from memlane.engine.journal.catch_up import catch_up

        return catch_up(self._memory, char_limit)

    def min_score(self, chosen: float | None = None) -> float:
        """The floor a search holds its hits to: ``chosen`` or ``search.min_score``."""
        from memlane.engine.shared.request import check_min_score

        floor = self._memory.config.session.search_min_score if chosen is None else chosen
        check_min_score(floor)
        return floor
