"""The one search router: every search of every kind, from every host, comes here.

A search names what to look in (``kind``: journal, topic, session, all; none
means the notes: journal and topics) and how wide (``scope``: this project or
every project). The router checks the request once — ``k``, the mode, the
date bounds, the score floor and the combination of kind and scope — and
hands it to the one leg that answers it:

* the notes leg (recall/notes.py): this project's markdown index;
* the sessions layer (engine/sessions/): this project's past messages;
* both, merged by score (``kind: "all"``; scores share one calibrated scale);
* the cross-repo fan-out (recall/crossrepo.py): every project's notes.

``Memory.search``, ``memory_search`` (pi, MCP, Claude Code), ``memlane
search`` and the session's auto-context all call ``search`` here, so a rule
about searching is written once. Among them: a search never waits long for
a lock (engine/lock_waits.py); a part it could not read is left out and
named in a notice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memlane.core.types import SearchMode, SearchResult
from memlane.engine.shared.request import SearchRequest, check_request, notes_kind

if TYPE_CHECKING:
    import threading

    from memlane.engine.recall.crossrepo import FanOutResult
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.engine.shared.results import Progress


@dataclass
class Recalled:
    """What a search found: the hits, and the fan-out's accounting for ``scope: "all"``."""

    request: SearchRequest
    result: SearchResult
    fan_out: FanOutResult | None = None


@dataclass(frozen=True)
class Shown:
    """A person waits for the search (``memlane search``) and sees what it does first.

    With it, after the request's check, the search needs the notes' store
    (an error names the fix), loads the model on another thread while the
    indexes catch up, indexes every new message of the project's sessions
    for a ``kind`` session or all, and shows each catch-up's progress as a
    ``bar(label)`` and what it has to say through ``say`` as it happens.
    """

    bar: Callable[[str], AbstractContextManager[Progress]]
    say: Callable[[str], None]


def search(
    memory: ProjectMemory, request: SearchRequest, *, shown: Shown | None = None
) -> Recalled:
    """Check *request* once, then answer it from the leg its kind and scope name."""
    from memlane.engine.lock_waits import read_waits

    request = _redacted(request, request.query)
    check_request(request)
    with read_waits(memory), _first(memory, request, shown) as progress:
        recalled = _route(memory, request, progress)
    return replace(recalled, result=_labelled(memory, request, recalled.result))


def search_each(
    memory: ProjectMemory, request: SearchRequest, queries: Iterable[str], shown: Shown
) -> Iterator[SearchResult]:
    """One request for many queries (``memlane search --batch``), in order: checked
    once, the notes caught up once (its notices said), then each query answered
    from the index as it stands."""
    from contextlib import suppress

    from memlane.engine.lock_waits import read_waits
    from memlane.engine.recall.notes import sync_first
    from memlane.index.protocol import DimensionMismatchError, IndexUnavailableError

    check_request(request)
    with read_waits(memory), _first(memory, request, shown) as progress:
        if request.sync and request.route == "notes":
            # An index that cannot be used now: each query says it is unavailable.
            with suppress(IndexUnavailableError, DimensionMismatchError):
                for line in sync_first(memory, progress):
                    shown.say(line)
        for query in queries:
            one = replace(_redacted(request, query), sync=False)
            yield _labelled(memory, one, _route(memory, one, None).result)


def _redacted(request: SearchRequest, query: str) -> SearchRequest:
    """The query is echoed back ("No memories match …", the JSON's "query"), and
    may be logged: a key pasted into it is replaced before anything."""
    from memlane.store.secret_screen import redacted_for_display

    return replace(request, query=redacted_for_display(query))


@contextmanager
def _first(
    memory: ProjectMemory, request: SearchRequest, shown: Shown | None
) -> Iterator[Progress | None]:
    """What a checked search does before it reads, for a person (``Shown``); the
    progress of the notes' catch-up (None: nobody is shown it)."""
    if shown is None:
        yield None
        return
    route = request.route
    if route == "notes":
        memory.internals.require_store()
    warming = _warm_meanwhile(memory, request.mode)
    try:
        if route in ("sessions", "everything"):
            _backfill(memory, shown)
        with shown.bar("indexing") as bar:
            yield bar
    finally:
        if warming is not None:
            warming.join()


def _backfill(memory: ProjectMemory, shown: Shown) -> None:
    """Every new message of the project's sessions indexed, its notices said."""
    from memlane.engine.sessions.catch_up import backfill_first
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.index.protocol import IndexBusyError

    try:
        layer = SessionsLayer(memory)
    except IndexBusyError:
        return  # the sessions index cannot be opened now: the search says so
    with shown.bar("sessions") as progress:
        said = backfill_first(layer, progress)
    for line in said:
        shown.say(line)


def _warm_meanwhile(memory: ProjectMemory, mode: str) -> threading.Thread | None:
    """Load the embedding model on another thread while the index catches up,
    for a search that will embed its query with a model not loaded yet (a
    new process): the model's files load in native code, beside the
    catch-up's Python. The search waits for the same load (one per process)."""
    if mode == "lexical" or memory.config.embedding.provider == "none":
        return None
    if memory.embedding.ready:
        return None
    import threading

    thread = threading.Thread(target=memory.embedding.warm, name="memlane-warm", daemon=True)
    thread.start()
    return thread


def _labelled(memory: ProjectMemory, request: SearchRequest, result: SearchResult) -> SearchResult:
    """Every hit dated and banded, in the order asked for (recall/trust.py)."""
    from memlane.engine.recall.trust import finished, newest_first
    from memlane.index.legs.fusion import EVIDENCE

    calibrated = memory.config.index.fusion == EVIDENCE
    hits = finished(result.hits, memory.clock.today(), calibrated=calibrated)
    if request.order == "newest":
        hits = newest_first(hits)
    return replace(result, hits=hits)


def _route(memory: ProjectMemory, request: SearchRequest, progress: Progress | None) -> Recalled:
    route = request.route
    if route == "projects":
        from memlane.engine.recall.crossrepo import search_all

        after, before = request.note_bounds(memory.clock.zone())
        fan_out = search_all(
            memory,
            request.query,
            request.k,
            kind=notes_kind(request.kind),
            after=after,
            before=before,
            session=request.session,
            mode=request.mode,
            env=request.env,
            min_score=request.min_score,
        )
        return Recalled(request, fan_out.to_search_result(), fan_out)
    if route == "sessions":
        return Recalled(request, _sessions(memory, request))
    if route == "everything":
        return Recalled(request, _everything(memory, request, progress))
    from memlane.engine.recall.notes import search_notes

    return Recalled(request, search_notes(memory, _with_k(memory, request), progress))


def _with_k(memory: ProjectMemory, request: SearchRequest) -> SearchRequest:
    if request.k is not None:
        return request
    return replace(request, k=memory.config.session.search_top_k)


def _sessions(memory: ProjectMemory, request: SearchRequest) -> SearchResult:
    from memlane.engine.lock_waits import sessions_unread
    from memlane.engine.sessions.layer import search_sessions
    from memlane.index.protocol import IndexBusyError

    k = request.k or memory.config.sessions.recall_default_top_k
    said: list[str] = []
    if request.outside_sessions:
        from memlane.engine.sessions.catch_up import catch_up_transcripts

        said = catch_up_transcripts(memory)
    try:
        found = search_sessions(
            memory,
            request.query,
            k,
            mode=request.mode,
            session=request.session,
            after=request.after,
            before=request.before,
            role=request.role,
        )
    except IndexBusyError as exc:
        # Locked past the wait budget: the other parts of the search still answer.
        mode: SearchMode = "semantic" if request.mode == "semantic" else "lexical"
        found = SearchResult(request.query, mode, [], notices=[sessions_unread(exc)])
    if said:
        found = replace(found, notices=[*said, *found.notices])
    return found.at_least(request.floor(memory.config.session.search_min_score))


def _everything(
    memory: ProjectMemory, request: SearchRequest, progress: Progress | None
) -> SearchResult:
    """Journal, topics and sessions in one list, merged by score (all in [0, 1])."""
    from memlane.engine.recall.notes import search_notes

    request = _with_k(memory, request)
    k = request.k or memory.config.session.search_top_k
    floor = request.floor(memory.config.session.search_min_score)
    notes = search_notes(memory, replace(request, kind=None, min_score=floor), progress)
    sessions = _sessions(memory, replace(request, min_score=floor))
    # One calibrated scale for every kind (index/legs/relevance.py): merged by score.
    hits = sorted([*notes.hits, *sessions.hits], key=lambda h: -h.score)[:k]
    return SearchResult(
        query=request.query,
        mode=notes.mode,
        hits=hits,
        notices=[*notes.notices, *sessions.notices],
        min_score=floor,
        below_min_score=notes.below_min_score + sessions.below_min_score,
    )
