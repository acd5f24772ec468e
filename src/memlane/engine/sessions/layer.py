"""The sessions layer bound to a project: what the engine, the CLI, the
tools and the hosts call (ingestion, sweep and recall of every past message
of the project's agent transcripts)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.bounds import parse_range
from memlane.core.errors import EmbedderError
from memlane.core.types import SearchMode, SearchResult
from memlane.engine.sessions.hits import SessionHit, SessionSearch
from memlane.engine.sessions.indexer import SessionIndexer
from memlane.engine.sessions.ingest import BackfillReport, SessionIngestor
from memlane.engine.sessions.registry import damage_notice, open_store
from memlane.engine.sessions.sweep import (
    META_SWEEP_BUSY,
    META_SWEEP_CYCLES,
    META_SWEEP_INTERVAL_MS,
    META_SWEEP_LAST_AT,
    META_SWEEP_LAST_ERROR,
    META_SWEEP_PID,
    Sweeper,
)
from memlane.engine.shared.request import check_k, check_mode, check_role
from memlane.index.session_docs import SessionFilters, SessionInfo, StoredDoc
from memlane.transcripts.locate import Source, discover_sources

if TYPE_CHECKING:
    from memlane.embed.base import Embedder
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import Progress


def project_sources(mem: ProjectMemory, env: Mapping[str, str] | None = None) -> list[Source]:
    """The agents' transcripts of this project: its directories' sessions, and
    those of every worktree of the repository when they share its memory."""
    from memlane.core.scope import shared_checkouts

    dirs = [mem.scope.repository_dir]
    if mem.scope.cwd != mem.scope.repository_dir:
        dirs.append(mem.scope.cwd)
    dirs += [
        d for d in shared_checkouts(mem.scope, mem.config.get("scope.worktrees")) if d not in dirs
    ]
    return discover_sources(dirs, env)


def _vector_space(mem: ProjectMemory) -> str:
    from memlane.embed.factory import vector_space

    return vector_space(mem.config.embedding)


class SessionsLayer:
    """The sessions layer of one project: ingestion, sweep and recall."""

    def __init__(self, mem: ProjectMemory, *, embedder: Embedder | str | None = "memory") -> None:
        """``embedder``: "memory" uses the Memory's (shared, loaded on first
        embed); an Embedder, or None (lexical only), overrides it."""
        self.mem = mem
        self.settings = mem.config.sessions
        if self.settings.debug:
            from memlane.core import trace

            trace.force_on()  # pi-lcm-memory's debug switch: the side-channel trace log
        self.store = open_store(mem)
        self._from_memory = embedder == "memory"
        chosen: Embedder | None = None
        if self._from_memory:
            chosen = mem.embedding.embedder
        elif embedder is not None and not isinstance(embedder, str):
            chosen = embedder
        self._embedder = chosen
        model = None
        if chosen is not None:
            model = _vector_space(mem) if self._from_memory else chosen.name
        self.ingestor = SessionIngestor(
            self.store, chosen, self.settings, lambda: project_sources(mem), model=model
        )
        self._indexer: SessionIndexer | None = None

    # ingestion
    def backfill(self, progress: Progress | None = None) -> BackfillReport:
        return self.ingestor.ingest(progress=progress)

    def index_new(self, transcript_path: str | Path) -> None:
        if self._indexer is None:
            self._indexer = SessionIndexer(self.ingestor)
        self._indexer.index_new(transcript_path)

    def flush(self, timeout: float | None = None) -> bool:
        return self._indexer.flush(timeout) if self._indexer is not None else True

    def sweeper(self) -> Sweeper:
        """A sweeper on this project's clock (the memory's)."""
        return Sweeper(self.ingestor, self.settings, clock=self.mem.clock)

    def reindex(self, progress: Progress | None = None) -> BackfillReport:
        # One step: a sweep of this process reading the transcripts between the
        # clear and the re-read would leave the reindex nothing to read.
        with self.store.ingest_lock:
            self.store.clear()
            self.ingestor._model_bound = False
            return self.ingestor.ingest(progress=progress, operation="reindex")

    def close(self) -> None:
        if self._indexer is not None:
            self._indexer.close()
            self._indexer = None

    # recall
    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        mode: SearchMode = "hybrid",
        session: str | None = None,
        after: str | None = None,
        before: str | None = None,
        role: str | None = None,
    ) -> SessionSearch:
        from memlane.store.secret_screen import redacted_for_display

        # The query is echoed back ("No session messages match …"): never a
        # key pasted into it (the router did the same for its requests).
        query = redacted_for_display(query)
        k = self.settings.recall_default_top_k if k is None else k
        # The router checked its requests already; `memlane sessions search` and
        # the session's auto-recall call here directly, with the same checks.
        check_k(k)
        check_mode(mode)
        if role is not None:
            check_role(role)
        low, high = parse_range(after, before, self.mem.clock.zone())
        filters = SessionFilters(
            session=session or None,
            after=None if low is None else low.utc_key,
            before=None if high is None else high.utc_key,
            role=role,
        )
        notices: list[str] = []
        vector = None
        if self._from_memory:
            vector = self.mem.embedding.query_vector(query, mode, notices)
        elif mode != "lexical" and query.strip():
            # An embedder given explicitly (benchmarks, tests): no fallback to manage.
            if self._embedder is None:
                if mode == "semantic":
                    raise EmbedderError("semantic search needs an embedder (no embedder)")
            else:
                vector = self._embedder.embed_query(query)
        if mode == "semantic" and vector is None:
            return SessionSearch(query, "semantic", [], self._with_damage(notices))
        got, scored = self.store.search(query, vector, k, filters, lexical=mode != "semantic")
        return SessionSearch(
            query, got, [SessionHit.of(s) for s in scored], self._with_damage(notices)
        )

    def _with_damage(self, notices: list[str]) -> list[str]:
        # Popped after the store was touched: damage found by this very
        # search (and the fresh file it answered from) is reported with it.
        notice = damage_notice(self.store, pop=True)
        return [*notices, notice] if notice is not None else notices

    def resolve(self, key_or_entry: str) -> StoredDoc | None:
        """A document by its key, else by transcript entry id (its own text first)."""
        doc = self.store.get(key_or_entry)
        if doc is not None:
            return doc
        found = self.store.find_entry(key_or_entry)
        return found[0] if found else None

    def similar(self, key_or_entry: str, k: int = 10) -> SessionSearch:
        check_k(k)
        doc = self.resolve(key_or_entry)
        if doc is None:
            from memlane.core.errors import NotFoundError

            raise NotFoundError(
                f"no session document {key_or_entry!r}",
                "pass a key or an entry id from a session search hit",
            )
        scored = self.store.similar(doc.key, k)
        return SessionSearch(
            doc.text[:200], "semantic", [SessionHit.of(s) for s in scored], self._with_damage([])
        )

    def recent(
        self, n: int | None = None, exclude: str | None = None, *, offset: int = 0
    ) -> list[SessionInfo]:
        """The sessions with the latest messages, newest first, from *offset*."""
        n = self.settings.primer_top_k if n is None else n
        return self.store.recent_sessions(n, exclude, offset=offset)

    def on_day(self, day: str, n: int, *, offset: int = 0) -> list[SessionInfo]:
        """The sessions with messages on UTC *day* (``YYYY-MM-DD``), latest
        first; their counts and first/last times are that day's."""
        return self.store.sessions_on_day(day, n, offset=offset)

    def messages_of(self, transcript: str, n: int, *, offset: int = 0) -> list[StoredDoc]:
        """*n* stored messages of *transcript* in order, from *offset*."""
        return self.store.transcript_page(transcript, n, offset)

    def message_count(self, transcript: str) -> int:
        return self.store.transcript_count(transcript)

    def format_of(self, transcript: str) -> str | None:
        """The format *transcript* was read as: it names the agent (``SessionInfo.format``)."""
        return self.store.transcript_format(transcript)

    def stats(self) -> dict[str, Any]:
        data = self.store.stats()
        data["embedding_provider"] = self.mem.config.embedding.provider
        data.pop("rebuilt", None)  # said by the notice, in words
        notice = damage_notice(self.store, pop=True)
        if notice is not None:
            data["notice"] = notice
        return data

    def status(self) -> dict[str, Any]:
        meta = self.store.meta()
        notice = damage_notice(self.store, pop=True)
        return {
            "sweep_cycles": int(meta.get(META_SWEEP_CYCLES) or 0),
            "busy": bool(meta.get(META_SWEEP_BUSY)),
            "last_error": meta.get(META_SWEEP_LAST_ERROR),
            "interval_ms": meta.get(META_SWEEP_INTERVAL_MS),
            "last_sweep_at": meta.get(META_SWEEP_LAST_AT),
            "sweeper_pid": meta.get(META_SWEEP_PID),
            "base_interval_ms": self.settings.sweep_interval_ms,
            # Only when set: the CLI prints every key, so it shows up there.
            **({"notice": notice} if notice is not None else {}),
        }


# -- module functions: what the tools, the CLI and the Session call --------------------------


def search_sessions(
    mem: ProjectMemory,
    query: str,
    k: int | None = None,
    mode: SearchMode = "hybrid",
    session: str | None = None,
    after: str | None = None,
    before: str | None = None,
    role: str | None = None,
) -> SearchResult:
    """memory_search kind "session": hits whose content is the message text,
    chunk hash the document key, source the transcript path, heading
    ``<role> <utc time> session:<id> turn:<entry id>``."""
    layer = SessionsLayer(mem)
    return layer.search(
        query, k, mode=mode, session=session, after=after, before=before, role=role
    ).to_search_result()


def similar_sessions(mem: ProjectMemory, key_or_entry: str, k: int = 10) -> SearchResult:
    """memory_similar on a session document (key or message id), itself excluded."""
    return SessionsLayer(mem).similar(key_or_entry, k).to_search_result()


def recent_sessions(
    mem: ProjectMemory, n: int | None = None, exclude: str | None = None
) -> list[SessionInfo]:
    """The primer's input: the latest sessions, newest first."""
    return SessionsLayer(mem).recent(n, exclude)
