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

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memlane.core.types import SearchMode, SearchResult
from memlane.engine.recall.request import SearchRequest, check_request, notes_kind

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory
    from memlane.engine.recall.crossrepo import FanOutResult


@dataclass
class Recalled:
    """What a search found: the hits, and the fan-out's accounting for ``scope: "all"``."""

    request: SearchRequest
    result: SearchResult
    fan_out: FanOutResult | None = None


def search(memory: ProjectMemory, request: SearchRequest) -> Recalled:
    """Check *request* once, then answer it from the leg its kind and scope name."""
    from memlane.engine.lock_waits import read_waits
    from memlane.store.secret_screen import redacted_for_display

    # The query is echoed back ("No memories match …", the JSON's "query"),
    # and may be logged: a key pasted into it is replaced before anything.
    request = replace(request, query=redacted_for_display(request.query))
    check_request(request)
    with read_waits(memory):
        recalled = _route(memory, request)
    return replace(recalled, result=_labelled(memory, request, recalled.result))


def _labelled(memory: ProjectMemory, request: SearchRequest, result: SearchResult) -> SearchResult:
    """Every hit dated and banded, in the order asked for (recall/trust.py)."""
    from memlane.engine.recall.trust import finished, newest_first
    from memlane.index.legs.fusion import EVIDENCE

    calibrated = memory.config.index.fusion == EVIDENCE
    hits = finished(result.hits, memory.clock.today(), calibrated=calibrated)
    if request.order == "newest":
        hits = newest_first(hits)
    return replace(result, hits=hits)


def _route(memory: ProjectMemory, request: SearchRequest) -> Recalled:
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
        return Recalled(request, _everything(memory, request))
    from memlane.engine.recall.notes import search_notes

    return Recalled(request, search_notes(memory, _with_k(memory, request)))


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
    return found.at_least(memory.min_score(request.min_score))


def _everything(memory: ProjectMemory, request: SearchRequest) -> SearchResult:
    """Journal, topics and sessions in one list, merged by score (all in [0, 1])."""
    from memlane.engine.recall.notes import search_notes

    request = _with_k(memory, request)
    k = request.k or memory.config.session.search_top_k
    floor = memory.min_score(request.min_score)
    notes = search_notes(memory, replace(request, kind=None, min_score=floor))
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
