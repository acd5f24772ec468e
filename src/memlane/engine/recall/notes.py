"""The notes leg of the router: L1 recall over this project's markdown index.

Hybrid unless it cannot be: "hybrid" (BM25 + dense, fused by
``index.fusion``), "lexical" (BM25 only, no model load) or "semantic" (dense
only; an error when no embedder is available). Only hits scoring the floor
(``min_score``, default ``search.min_score``) or more are returned.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import DiskFullError, MemlaneError
from memlane.core.in_flight import InFlight
from memlane.core.types import Hit, Kind, SearchMode, SearchResult
from memlane.engine.lock_waits import NEWEST_NOT_INDEXED, newest_not_indexed
from memlane.engine.recall.trust import LOOKAHEAD, SMALL_STORE_SHOWN, refine_notes
from memlane.index.protocol import (
    DimensionMismatchError,
    IndexBusyError,
    IndexUnavailableError,
    QueryVector,
)

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.request import SearchRequest
    from memlane.engine.shared.results import Progress

#: Said when a hybrid search in a session answered from the lexical leg because the
#: embedding model is still loading (waiting for it could take a minute on a first start).
MODEL_LOADING = (
    "the embedding model is still loading, so these are lexical (BM25) results only; "
    "search again in a moment for results by meaning"
)
#: Said with a search's results while an index run of the project is under way
#: (a first session's catch-up, a rebuild): an empty or short result may only
#: mean the index has not reached those memories yet.
INDEX_BUILDING = (
    "the index is still being built: memories it has not reached yet are missing from "
    "these results; search again in a moment (memory_status shows the index state)"
)


def search_notes(
    memory: ProjectMemory, request: SearchRequest, progress: Progress | None = None
) -> SearchResult:
    """The top ``request.k`` chunks of the notes (journal and topics) for a checked request.

    With ``request.sync`` the index is first brought in line with the whole
    store (``sync_first``, telling *progress*); without, only what this
    process wrote since the last index run is indexed first (``catch_up``,
    bounded by the handle's ``catch_up_char_limit``), so a memory written a
    moment ago is found.
    """
    notices: list[str] = []
    if not request.sync and memory.internals.parts.indexing:
        notices.append(INDEX_BUILDING)
    try:
        return _search_notes(memory, request, notices, progress)
    except (IndexUnavailableError, DimensionMismatchError, IndexBusyError) as exc:
        # Nothing of the notes could be read (held past the read's wait budget,
        # engine/lock_waits.py, or unusable): the catch-up's notice says nothing more.
        notices[:] = [n for n in notices if not n.startswith(NEWEST_NOT_INDEXED)]
        notices.append(unavailable_notice(exc))
    mode: SearchMode = "lexical" if request.mode == "lexical" else "hybrid"
    if request.mode == "semantic":
        mode = "semantic"
    return SearchResult(query=request.query, mode=mode, hits=[], notices=notices)


def _model_loading(memory: ProjectMemory) -> bool:
    """The embedding model is being loaded (or derived) and a search would wait for it."""
    return (
        memory.config.embedding.provider != "none"
        and memory.internals.parts.embedder_state.loading_now
    )


#: How the notice of an index that could not be read at all begins.
UNAVAILABLE = "the index is unavailable, so nothing was searched"


def unavailable_notice(exc: MemlaneError) -> str:
    """One line: the index cannot answer now, why, the fix, and that nothing is lost."""
    fix = f"; {exc.hint}" if exc.hint else ""
    return (
        f"{UNAVAILABLE}: {exc.message}{fix} "
        "(memories are still written to markdown; the next index run catches up)"
    )


def sync_first(memory: ProjectMemory, progress: Progress | None = None) -> list[str]:
    """Bring the notes index in line with the whole store before a search; its notices.

    A full disk or a lock held past the wait budget leaves the index as it
    stands to answer, and says so; an index that cannot be used at all is
    left for the search to report (it says the index is unavailable).
    """
    try:
        return memory.sync(progress, quiet_when_idle=True).notices
    except DiskFullError as exc:
        # What changed since the last index run is missing until the disk has room.
        return [
            f"{exc.message}; these results come from the index as it was, "
            "without what changed since it was last updated"
        ]
    except IndexBusyError as exc:
        # Another process holds the index: the next sync picks the rest up.
        return [newest_not_indexed(exc)]


def _search_notes(
    memory: ProjectMemory, request: SearchRequest, notices: list[str], progress: Progress | None
) -> SearchResult:
    from memlane.engine.shared.request import notes_kind
    from memlane.index.protocol import SearchFilters

    k = request.k or memory.config.session.search_top_k
    if request.sync:
        notices.extend(sync_first(memory, progress))
    mode = request.mode
    if not request.sync:
        from memlane.engine.journal.catch_up import catch_up_before_search

        # An agent's search in a session never waits for the model to load
        # (seconds, a minute on a first start): the lexical leg answers and
        # says so; the fresh chunks are stored for it and embedded later.
        loading = not request.wait_for_model and mode == "hybrid" and _model_loading(memory)
        if request.catch_up:
            # A lexical search needs no vectors: it does not load the model to
            # embed the fresh chunks either (they are embedded once it is loaded).
            embed = not loading and (mode != "lexical" or memory.embedding.ready)
            said = catch_up_before_search(memory, embed=embed)
            notices.extend(said)
            locked = any(n.startswith(NEWEST_NOT_INDEXED) for n in said)
            if request.outside_notes and not locked:  # a locked index: not twice
                from memlane.engine.journal.catch_up import catch_up_outside

                said, complete = catch_up_outside(memory, embed=embed)
                if complete and INDEX_BUILDING in notices:
                    # The index run is still at work (embedding, say), but
                    # everything it has not reached was just indexed here.
                    notices.remove(INDEX_BUILDING)
                notices.extend(said)
        if loading:
            mode = "lexical"
            notices.append(MODEL_LOADING)
    index = memory.index
    vector: QueryVector
    if mode == "hybrid" and index.embeds_beside_lexical:
        # The index's lexical round trip needs no vector: embed meanwhile.
        vector = InFlight(
            lambda: memory.embedding.query_vector(request.query, mode, notices),
            name="memlane-query-vector",
        )
    else:
        vector = memory.embedding.query_vector(request.query, mode, notices)
    after, before = request.note_bounds(memory.clock.zone())
    filters = SearchFilters(
        kind=notes_kind(request.kind),
        source_prefix=request.source_prefix,
        after=after,
        before=before,
        session=request.session,
    )
    if mode == "semantic" and vector is None:
        return SearchResult(query=request.query, mode="semantic", hits=[], notices=notices)
    try:
        got_mode, scored = index.search(
            request.query, vector, k + LOOKAHEAD, filters, lexical=mode != "semantic", reach=k
        )
    finally:
        if isinstance(vector, InFlight):
            # A search that failed before it needed the vector: its notices
            # are complete before this answer is.
            vector.settle()
    store = memory.scope.store
    hits = [Hit.of(s.chunk, s.score, kind=_kind_of(s.chunk.source, store)) for s in scored]
    fetched = len(hits)
    hits = refine_notes(
        hits, index, index.settings.cosine_scale, memory.clock.today(), store, request.query
    )
    result = SearchResult(query=request.query, mode=got_mode, hits=hits[:k], notices=notices)
    # A store smaller than the search's reach (it returned every entry it
    # holds) shows its best few even when weak, unless a floor was asked
    # for: with a handful of entries a model's evidence is thin (a right
    # answer at cosine 0.1 is no rarer than gibberish), reading three lines
    # is cheap, and "nothing stored" makes an agent redo work.
    small = fetched < k + LOOKAHEAD and request.min_score is None
    keep = min(SMALL_STORE_SHOWN, k) if small and got_mode != "lexical" else 0
    return result.at_least(request.floor(memory.config.session.search_min_score), keep=keep)


@lru_cache(maxsize=4096)
def _kind_of(source: str, store: Path) -> Kind:
    """A chunk's kind by its file (store/layout.py), resolved once per file:
    every search asks it for each hit, and it resolves paths on disk."""
    from memlane.store.layout import kind_of

    return kind_of(Path(source), store)
