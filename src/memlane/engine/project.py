"""``Memory``: one project's memory, the object every host and the CLI call.

It ties the pieces together in the one allowed direction: engine → store,
index, embed → core. Heavy parts (the embedding model, the index file) are
opened lazily, once, on first use.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.config import Config, load_config
from memlane.core.errors import (
    DiskFullError,
    EmbedderError,
    MemlaneError,
    NotFoundError,
    StoreError,
)
from memlane.core.paths import index_dir
from memlane.core.scope import Scope, resolve_scope
from memlane.core.settings import SEARCH_TOP_K
from memlane.core.types import Anchor, Chunk, Entry, Hit, Kind, SearchResult, Section
from memlane.engine.journal.fresh import FreshWrites
from memlane.engine.reports import IndexReport, Progress, Status

if TYPE_CHECKING:
    from memlane.embed.base import Embedder, Vectors
    from memlane.engine.journal.indexer import Indexer
    from memlane.index.sqlite.notes import SqliteIndex
    from memlane.llm.base import LLM
    from memlane.store.daily import DailyWriter
    from memlane.store.damage import DamagedLine
    from memlane.store.forget import Removed
    from memlane.store.repair import SetAside
    from memlane.transcripts.model import Transcript

SEARCH_K_MAX = 100
#: A failed embedder load is retried after this long (the negative cache). A
#: tuning knob read at call time, so a host (or a test) may shorten it.
EMBEDDER_RETRY_S = 30.0
SEARCH_MODES = ("hybrid", "lexical", "semantic")
SESSION_ID_ENV = "MEMLANE_SESSION_ID"
TRANSCRIPT_ENV = "MEMLANE_TRANSCRIPT"
DEFAULT_SESSION_ID = "cli"
NO_TRANSCRIPT = "none"

_CHUNK_HASH_RE = re.compile(r"^[0-9a-f]{16}$")


class Memory:
    """One project's memory: write, index, search, expand, status."""

    def __init__(
        self,
        scope: Scope,
        config: Config,
        *,
        clock: Clock = SYSTEM_CLOCK,
        catch_up_char_limit: int | None = None,
        _parts: _SharedParts | None = None,
    ) -> None:
        self.scope = scope
        self.config = config
        # The one "now" of this memory: entries, compaction, dream and the
        # index state all read it, so they agree on the day (core/clock.py).
        self.clock = clock
        self.notices: list[str] = list(config.notices)
        # A search without a full sync first indexes this process's fresh
        # writes (``catch_up``); a handle that answers under a deadline
        # (auto-context) skips that when it would embed more text than this.
        self.catch_up_char_limit = catch_up_char_limit
        self._parts = _parts or _SharedParts()
        self._index: SqliteIndex | None = None

    def fork(self, *, catch_up_char_limit: int | None = None) -> Memory:
        """Another handle on the same memory for another thread.

        An index connection belongs to one thread, so each worker of a
        session (indexer, auto-context search) gets its own handle; the
        embedder (one model load per process), the daily-file writer (one
        ``## Session`` decision per process) and the record of fresh writes
        (``fresh``) are shared. ``catch_up_char_limit``: see ``catch_up``.
        """
        return Memory(
            self.scope,
            self.config,
            clock=self.clock,
            catch_up_char_limit=catch_up_char_limit,
            _parts=self._parts,
        )

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
    def model(self) -> str:
        """The model name that goes into every chunk hash."""
        return self.config.embedding.model

    @property
    def embedder(self) -> Embedder | None:
        """The embedder, or None (with ``embedder_problem`` saying why).

        Loads on first use. A failed load is retried after
        ``EMBEDDER_RETRY_S`` (a short negative cache), so a provider that
        comes back mid-session is picked up without a restart.
        """
        parts = self._parts
        with parts.lock:
            stale = (
                parts.embedder_loaded
                and parts.embedder is None
                and self.config.embedding.provider != "none"
                and time.monotonic() - parts.embedder_failed_at >= EMBEDDER_RETRY_S
            )
            if not parts.embedder_loaded or stale:
                from memlane.embed.factory import make_embedder

                parts.embedder_problem = None
                parts.loading = True
                try:
                    parts.embedder = make_embedder(self.config.embedding)
                    if parts.embedder is None:
                        parts.embedder_problem = "embedding.provider is none"
                except EmbedderError as exc:
                    parts.embedder = None
                    parts.embedder_problem = exc.message
                    parts.embedder_failed_at = time.monotonic()
                finally:
                    parts.loading = False
                parts.embedder_loaded = True
            return parts.embedder

    @property
    def embedder_ready(self) -> bool:
        """True when a search would not wait for the model to load."""
        parts = self._parts
        if not parts.embedder_loaded or parts.loading:
            return False
        # Lazy providers say whether their model is in memory yet (indexing may
        # have loaded it); the others are ready once they exist.
        return parts.warmed or bool(getattr(parts.embedder, "loaded", True))

    def warm_embedder(self) -> None:
        """Load the model now (a session does this in the background at start).

        Providers load lazily, so a broken model or an unreachable server
        only shows at the first embedding; found here, it enters the
        negative cache instead of costing the first search its wait.
        """
        embedder = self.embedder
        if embedder is None:
            return
        try:
            warm = getattr(embedder, "warm", None)
            if callable(warm):
                warm()
            else:
                embedder.embed_query("memlane warm-up")
        except EmbedderError as exc:
            self.embedder_failed(exc)
            return
        self._parts.warmed = True

    def embedder_failed(self, exc: EmbedderError) -> None:
        """An embedding call failed: skip the dense leg until the retry time."""
        parts = self._parts
        with parts.lock:
            parts.embedder = None
            parts.embedder_problem = exc.message
            parts.embedder_failed_at = time.monotonic()
            parts.embedder_loaded = True
            parts.warmed = False

    @property
    def embedder_problem(self) -> str | None:
        return self._parts.embedder_problem

    @property
    def index_path(self) -> Path:
        uri = self.config.index.uri
        if uri:
            return Path(uri).expanduser() / f"{self.scope.collection}.sqlite"
        return index_dir() / f"{self.scope.collection}.sqlite"

    @property
    def index(self) -> SqliteIndex:
        if self._index is None:
            from memlane.index.sqlite.notes import SqliteIndex

            self._index = SqliteIndex(self.index_path, self.config.index)
        return self._index

    def close(self) -> None:
        if self._index is not None:
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
    ) -> Entry:
        """Append one timestamped, anchored entry to today's daily file.

        Secrets are redacted and ``<private>`` blocks dropped first: nothing
        secret is ever written to the store, whoever writes.
        """
        from memlane.store.daily import new_entry_id
        from memlane.store.redaction import redact_for_storage

        text = redact_for_storage(text)

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
        self.note_written(entry.path)
        return entry

    @property
    def fresh(self) -> FreshWrites:
        """The store files this process wrote since they were last indexed."""
        return self._parts.fresh

    def note_written(self, *paths: str | Path) -> None:
        """Store files were just written or removed: the next search indexes them first.

        ``write`` notes its daily file itself; other writers of the store
        (topic ``add``/``remove``) call this.
        """
        self._parts.fresh.note(paths)

    def require_store(self) -> None:
        """Raise a clear error when this project has no memory store yet."""
        if not self.scope.store.is_dir():
            raise StoreError(
                f"no memory store at {self.scope.store}",
                "write a first memory with `memlane write TEXT`, or run memlane in "
                "(or with -C) the project you mean",
            )

    # -- index ------------------------------------------------------------------

    def sync(
        self,
        progress: Progress | None = None,
        *,
        operation: str = "index",
        quiet_when_idle: bool = False,
    ) -> IndexReport:
        """Index what changed in the store since the last run.

        The embedder is only loaded when there is something new to embed, so
        a sync over an unchanged store costs a few stat calls. With
        ``quiet_when_idle`` (the catch-up before a search) an idle sync does
        not rewrite the index state file.
        """
        from memlane.embed.factory import vector_space
        from memlane.index import state

        index = self.index
        rebuilt = index.pop_rebuilt_reason()
        space = vector_space(self.config.embedding)
        space_changed = index.ensure_model(space, None)
        state_path = self.scope.state_path
        paths = [str(self.scope.store)]
        indexer = self.indexer()
        fresh = self._parts.fresh
        # Writes up to here are covered by this run (it reads the files after).
        written_upto, _ = fresh.snapshot()
        plan = indexer.plan(progress)
        if quiet_when_idle and plan.idle and not rebuilt and not fresh.unrecorded:
            # A catch-up before a search found nothing to do: leave the
            # state file alone so it keeps describing the last real run.
            report = indexer.apply(plan, operation, progress)
            fresh.indexed(written_upto)
            return report

        def record(event: Callable[..., None], *args: object) -> None:
            event(
                state_path,
                *args,
                operation=operation,
                paths=paths,
                collection=self.scope.collection,
                uri=index.uri,
                now=self.clock.now(),
            )

        record(state.record_started)
        try:
            report = indexer.apply(plan, operation, progress)
        except MemlaneError as exc:
            record(state.record_error, exc)
            raise
        fresh.indexed(written_upto)
        fresh.note(plan.changed_since())
        fresh.recorded()
        self.add_embedder_notice(indexer, report)
        if space_changed:
            report.notices.append(
                f"the embedding setup changed (now {space}); every chunk was embedded again"
            )
        if rebuilt:
            report.notices.insert(0, f"the index was rebuilt from markdown: {rebuilt}")
        record(state.record_report, report)
        return report

    def indexer(self) -> Indexer:
        """An ``Indexer`` over this memory's store and this handle's index."""
        from memlane.engine.journal.indexer import Indexer

        return Indexer(
            self.scope.store,
            self.index,
            self.model,
            lambda: self.embedder,
            vectors_expected=self.config.embedding.provider != "none",
        )

    def add_embedder_notice(self, indexer: Indexer, report: IndexReport) -> None:
        """Say so in *report* when its chunks were stored without vectors."""
        problem = indexer.embedder_problem or self.embedder_problem
        if problem and report.unembedded_chunks and report.vectors_expected:
            report.notices.append(
                f"semantic search unavailable ({problem}); chunks were stored for lexical search"
            )

    def catch_up(self, char_limit: int | None = None) -> IndexReport | None:
        """Index only the files this process wrote since they were last indexed.

        What a search runs first when a session's debounced indexer keeps
        the index current: no walk of the store, None at once when nothing
        was written; with ``char_limit``, None (the work left to the
        indexer) when it would embed more characters than that. See
        ``engine/journal/fresh.py``.
        """
        from memlane.engine.journal.fresh import catch_up

        return catch_up(self, char_limit)

    def reindex(self, progress: Progress | None = None) -> IndexReport:
        """Drop the derived index and rebuild it from the markdown alone."""
        self.close()
        from memlane.index.sqlite.notes import SqliteIndex

        SqliteIndex.destroy(self.index_path)
        return self.sync(progress, operation="reindex")

    # -- recall -------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = SEARCH_TOP_K,
        *,
        kind: Kind | None = None,
        after: str | None = None,
        before: str | None = None,
        session: str | None = None,
        source_prefix: str | None = None,
        mode: str = "hybrid",
        sync: bool = True,
        min_score: float | None = None,
    ) -> SearchResult:
        """L1 recall: the top-k chunks for a query, hybrid unless it cannot be.

        ``mode``: "hybrid" (BM25 + dense, fused by ``index.fusion``),
        "lexical" (BM25 only, no model load) or "semantic" (dense only;
        an error when no embedder is available). Only hits scoring
        ``min_score`` or more are returned (default ``search.min_score``).

        ``sync``: bring the index in line with the whole store first (the
        CLI, the MCP server: another process may have written). False when
        a session's indexer keeps the index current: only what this process
        wrote since the last index run is indexed first (``catch_up``,
        bounded by ``catch_up_char_limit``), so a memory written a moment
        ago is found.
        """
        from memlane.index.protocol import SearchFilters

        if not 1 <= k <= SEARCH_K_MAX:
            raise MemlaneError(f"k must be between 1 and {SEARCH_K_MAX}, got {k}")
        if mode not in SEARCH_MODES:
            raise MemlaneError(
                f"unknown search mode {mode!r}", f"use one of: {', '.join(SEARCH_MODES)}"
            )
        notices: list[str] = []
        if sync:
            try:
                report = self.sync(quiet_when_idle=True)
                notices.extend(report.notices)
            except DiskFullError as exc:
                # The index as it stands still answers: what changed since
                # the last index run is missing until the disk has room.
                notices.append(
                    f"{exc.message}; these results come from the index as it was, "
                    "without what changed since it was last updated"
                )
        else:
            from memlane.engine.journal.fresh import catch_up_before_search

            notices.extend(catch_up_before_search(self))
        vector = self.query_vector(query, mode, notices)
        filters = SearchFilters(
            kind=kind, source_prefix=source_prefix, after=after, before=before, session=session
        )
        if mode == "semantic" and vector is None:
            return SearchResult(query=query, mode="semantic", hits=[], notices=notices)
        got_mode, scored = self.index.search(query, vector, k, filters, lexical=mode != "semantic")
        hits = [Hit.of(s.chunk, s.score) for s in scored]
        result = SearchResult(query=query, mode=got_mode, hits=hits, notices=notices)
        return result.at_least(self.min_score(min_score))

    def min_score(self, chosen: float | None = None) -> float:
        """The floor a search holds its hits to: ``chosen`` or ``search.min_score``."""
        floor = self.config.session.search_min_score if chosen is None else chosen
        if not 0.0 <= floor <= 1.0:
            raise MemlaneError(
                f"min_score must be between 0 and 1, got {floor}",
                "0 returns every match; the default is search.min_score",
            )
        return floor

    def query_vector(self, query: str, mode: str, notices: list[str]) -> Vectors | None:
        """The query's vector for a search in *mode*, or None for a lexical one.

        Hybrid falls back to lexical with a notice when the embedder is
        missing or fails (a failure enters the negative cache); semantic
        raises instead, since it has no fallback. Shared by every search that
        embeds a query: this project's, the sessions layer's, the fan-out's.
        """
        if mode == "lexical" or not query.strip():
            return None
        embedder = self.embedder
        if embedder is None:
            if mode == "semantic":
                raise EmbedderError(f"semantic search needs an embedder ({self.embedder_problem})")
            if self.config.embedding.provider != "none":  # none: lexical by choice
                notices.append(
                    f"semantic search unavailable ({self.embedder_problem}); "
                    "showing lexical (BM25) results"
                )
            return None
        try:
            vector = embedder.embed_query(query)
        except EmbedderError as exc:
            self.embedder_failed(exc)
            if mode == "semantic":
                raise
            notices.append(
                f"semantic search unavailable ({exc.message}); showing lexical (BM25) results"
            )
            return None
        self._parts.warmed = True
        return vector

    def similar(self, chunk_hash: str, k: int = 10) -> SearchResult:
        """More like this chunk: nearest stored vectors, the chunk itself excluded."""
        wanted = chunk_hash.strip().lower()
        if not 1 <= k <= SEARCH_K_MAX:
            raise MemlaneError(f"k must be between 1 and {SEARCH_K_MAX}, got {k}")
        chunk = self.index.get(wanted) if _CHUNK_HASH_RE.match(wanted) else None
        if chunk is None:
            raise NotFoundError(
                f"no chunk {chunk_hash!r} in collection {self.scope.collection}",
                "pass a chunk hash from memlane search (or a session message id)",
            )
        vector = self.index.vector_of(wanted)
        notices: list[str] = []
        if vector is None:
            # Not embedded (no working model when it was indexed): its own
            # words are the next best description of it.
            notices.append("this chunk has no vector yet; showing lexical neighbours")
            mode, scored = self.index.search(chunk.content, None, k + 1)
        else:
            mode, scored = self.index.search("", vector, k + 1, lexical=False)
        hits = [Hit.of(s.chunk, s.score) for s in scored if s.chunk.chunk_hash != wanted][:k]
        return SearchResult(query=chunk.content[:200], mode=mode, hits=hits, notices=notices)

    def expand(self, chunk_hash: str) -> Section:
        """L2 recall: the whole heading section a chunk came from, with its anchor."""
        from memlane.store.anchor import parse_anchor
        from memlane.store.section import extract_section, read_markdown, split_lines

        wanted = chunk_hash.strip().lower()
        if not _CHUNK_HASH_RE.match(wanted):
            raise NotFoundError(
                f"{chunk_hash!r} is not a chunk hash",
                "a chunk hash is 16 hex characters, as printed by `memlane search`",
            )
        chunk = self.index.get(wanted)
        if chunk is None:
            raise NotFoundError(
                f"no chunk {wanted} in collection {self.scope.collection}",
                "hashes change when a file is edited; run `memlane search` again for current ones",
            )
        try:
            text = read_markdown(Path(chunk.source), self.scope.store)
        except StoreError as exc:
            raise NotFoundError(
                f"chunk {wanted} came from {chunk.source}, which cannot be read: {exc.message}",
                "run `memlane index` to bring the index in line with the store",
            ) from None
        lines = split_lines(text)
        content, start, end = extract_section(lines, chunk.start_line, chunk.heading_level)
        if chunk.start_line > len(lines):
            self.notices.append(
                f"{chunk.source} is shorter than when it was indexed; run `memlane index`"
            )
        return Section(
            chunk_hash=wanted,
            source=chunk.source,
            heading=chunk.heading,
            start_line=start,
            end_line=end,
            content=content,
            anchor=parse_anchor(content),
        )

    def _sessions_stats(self) -> dict[str, Any] | None:
        if not self.config.sessions.enabled:
            return None
        return _sessions_stats_of(self)

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
        self.purge_damaged_copies()
        step("forget.purged")
        return removed

    def purge_damaged_copies(self) -> list[Path]:
        """Delete the moved-aside damaged copies of this collection's indexes."""
        from memlane.index.sqlite.recovery import remove_damaged_copies
        from memlane.index.sqlite.sessions import sessions_path_for

        index_path = self.index_path
        purged = remove_damaged_copies(index_path)
        purged += remove_damaged_copies(sessions_path_for(index_path))
        return purged

    def compact(self, source: str | None = None, llm: LLM | None = None) -> str:
        """Memory compaction with ``llm`` (default: the configured ``[llm]``)."""
        from memlane.engine.journal.maintenance import compact

        if llm is None:
            from memlane.llm.factory import make_llm

            llm = make_llm(self.config.llm, purpose="compact")
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
        return chunk_markdown(checked.text, str(real), self.model)

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

    def status(self, *, probe: bool = False, host_llm: bool = False) -> Status:
        """The doctor's report. ``probe`` loads the embedder to see that it works."""
        import sqlite3

        from memlane import __version__
        from memlane.engine.journal import capture_journal, capture_recovery
        from memlane.index import state
        from memlane.llm.factory import describe_llm

        # The doctor answers whatever state the index is in: a read-only or
        # full index disk is a problem to report, not a reason to fail.
        index_uri = f"sqlite://{self.index_path}"
        index_problem: str | None = None
        stats: dict[str, Any] = {}
        try:
            stats = self.index.stats()
            index_uri = self.index.uri
        except (MemlaneError, sqlite3.Error, OSError) as exc:
            index_problem = _index_problem(exc, self.index_path)
        versions = {
            "memlane": __version__,
            "python": sys.version.split()[0],
            "sqlite": _sqlite_version(),
        }
        notices = list(self.notices)
        departure = self.clock.departure()
        if departure:
            notices.append(f"clock: {departure}")
        missing: list[str] = [index_problem] if index_problem else []
        state_data = state.load(self.scope.state_path)
        if self.scope.state_path is not None and not state_data:
            notices.append("index: no state recorded yet (it is written by the next index)")
        parts = self._parts
        problem: str | None = None
        if probe and self.config.embedding.provider != "none":
            embedder = self.embedder
            problem = parts.embedder_problem
            if embedder is not None:
                try:
                    embedder.embed_query("memlane status probe")
                except EmbedderError as exc:
                    problem = exc.message
        if parts.embedder_loaded:
            problem = problem or (None if parts.embedder else parts.embedder_problem)
            embedder_state = f"unavailable: {problem}" if problem else "ready"
            if problem and self.config.embedding.provider != "none":
                missing.append(
                    f"embedder: {problem} — search falls back to BM25; fix "
                    "embedding.* (`memlane config list`) or set embedding.provider none"
                )
        else:
            embedder_state = f"{self.config.embedding.provider} (loads on first search)"
        from memlane.store.safe_paths import store_root_problem

        refused = store_root_problem(self.scope.store)
        if refused:
            missing.append(f"store: {refused}")
        elif not self.scope.store.is_dir():
            missing.append(
                f"store: {self.scope.store} does not exist yet — it is created by the first "
                "capture or `memlane write`"
            )
        failed = state_data.get("failed_files") or []
        if failed:
            missing.append(
                f"index: {len(failed)} file(s) could not be indexed (listed below); fix them "
                "and run `memlane index`"
            )
        # A refused store is not read at all (its files may be anyone's).
        damaged = [] if refused else self.damaged_lines()
        if damaged:
            files = len({line.path for line in damaged})
            missing.append(
                f"store: {len(damaged)} damaged line(s) in {files} file(s) are left out of "
                "search (listed below; their intact entries are indexed); "
                "`memlane status --fix` moves them into <file>.damaged"
            )
        chunks = int(stats.get("chunks", 0))
        vectors = int(stats.get("vectors", 0))
        if vectors < chunks and self.config.embedding.provider != "none":
            missing.append(
                f"vectors: {chunks - vectors} chunk(s) have no vector yet (lexical only); "
                "`memlane index` embeds them once the embedder works"
            )
        session = self.config.session
        llm_line = describe_llm(self.config.llm, host_available=host_llm)
        if "not usable" in llm_line:
            missing.append(f"llm: {llm_line}")
        sessions_stats = self._sessions_stats()
        if not refused and self.scope.store.is_dir():
            from memlane.engine.topics.dream import pending_recovery

            interrupted = pending_recovery(self.scope.store)
            if interrupted:
                missing.append(f"topics: {interrupted}")
        return Status(
            sessions=sessions_stats,
            versions=versions,
            scope=self.scope.to_json(),
            backend=self.config.index.backend,
            index_uri=index_uri,
            model=self.model,
            embedder=embedder_state,
            chunks=chunks,
            vectors=vectors,
            files=int(stats.get("files", 0)),
            state_path=str(self.scope.state_path) if self.scope.state_path else None,
            state=state_data,
            damaged=damaged,
            notices=notices,
            missing=missing,
            config=self.config.changed(),
            state_note=self.scope.state_dir_note,
            store_link=self.scope.store_link_note,
            capture={
                "enabled": session.capture_enabled,
                "llm": llm_line,
                "journal": capture_recovery.summary(capture_journal.journal_dir(self.scope)),
            },
            auto_context={
                "enabled": session.auto_context_enabled,
                "top_k": session.auto_context_top_k,
                "score_floor": session.auto_context_score_floor,
                "char_budget": session.auto_context_char_budget,
                "cap_ms": session.auto_context_cap_ms,
            },
        )


def _index_problem(exc: BaseException, path: Path) -> str:
    """One line for status: why the index cannot be opened and what to do."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (
            f"index: {path.parent} is not writable ({exc.strerror}), so the index cannot be "
            "opened or updated — make it writable, or set MEMLANE_HOME (or index.uri) to a "
            "writable directory; your memory files are not affected"
        )
    if isinstance(exc, MemlaneError):
        text = exc.message
        hint = exc.hint or "`memlane reindex` rebuilds it from markdown once the cause is fixed"
    else:
        text = getattr(exc, "strerror", None) or str(exc)
        hint = "`memlane reindex` rebuilds it from markdown once the cause is fixed"
    return f"index: {text} — {hint}"


def _sessions_stats_of(memory: Memory) -> dict[str, Any] | None:
    import sqlite3

    from memlane.engine.sessions.layer import open_store, sessions_path

    if not sessions_path(memory).exists():
        return None  # never created by a status call
    try:
        return open_store(memory).stats()
    except (MemlaneError, sqlite3.Error, OSError):
        # The doctor must answer whatever state the derived sessions file is
        # in. Damage is moved aside and rebuilt by the store (or raised as
        # IndexCorruptError), busy is IndexBusyError; the rest (unreadable
        # directory, I/O error) must not take `memlane status` down either.
        return None


class _SharedParts:
    """What every handle of one memory shares: the embedder and the writer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.embedder: Embedder | None = None
        self.embedder_loaded = False
        self.embedder_problem: str | None = None
        self.embedder_failed_at = 0.0
        self.loading = False
        self.warmed = False
        self._writer: DailyWriter | None = None
        self._writer_lock = threading.Lock()
        self.fresh = FreshWrites()

    def writer(self) -> DailyWriter:
        with self._writer_lock:
            if self._writer is None:
                from memlane.store.daily import DailyWriter

                self._writer = DailyWriter()
            return self._writer


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version
