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
about searching is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memlane.core.errors import MemlaneError
from memlane.core.types import Kind, SearchResult

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.engine.ports import ProjectMemory
    from memlane.engine.recall.crossrepo import FanOutResult

SEARCH_K_MAX = 100
SEARCH_MODES = ("hybrid", "lexical", "semantic")
SEARCH_KINDS = ("journal", "topic", "session", "all")
SEARCH_SCOPES = ("project", "all")
DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")

Route = Literal["notes", "sessions", "everything", "projects"]


@dataclass(frozen=True)
class SearchRequest:
    """One search, as every caller describes it.

    ``k`` None takes the kind's default (``search.top_k``; the sessions
    layer's ``sessions.recall_default_top_k`` for ``kind: "session"``).
    ``sync``: bring the notes index in line with the whole store first
    (the CLI, the MCP server: another process may have written); False in a
    live session, whose indexer keeps it current — then only what this
    process wrote since the last index run is indexed first.
    """

    query: str
    k: int | None = None
    kind: str | None = None
    scope: str = "project"
    after: str | None = None
    before: str | None = None
    session: str | None = None
    source_prefix: str | None = None
    role: str | None = None
    mode: str = "hybrid"
    min_score: float | None = None
    sync: bool = True
    env: Mapping[str, str] | None = None

    @property
    def route(self) -> Route:
        if self.scope == "all":
            return "projects"
        if self.kind == "session":
            return "sessions"
        if self.kind == "all":
            return "everything"
        return "notes"


@dataclass
class Recalled:
    """What a search found: the hits, and the fan-out's accounting for ``scope: "all"``."""

    request: SearchRequest
    result: SearchResult
    fan_out: FanOutResult | None = None


def check_request(request: SearchRequest) -> None:
    """Raise a MemlaneError naming the first thing wrong with *request*."""
    if request.kind is not None and request.kind not in SEARCH_KINDS:
        raise MemlaneError(
            f"unknown kind {request.kind!r}", f"use one of: {', '.join(SEARCH_KINDS)}"
        )
    if request.scope not in SEARCH_SCOPES:
        raise MemlaneError(
            f"unknown scope {request.scope!r}", f"use one of: {', '.join(SEARCH_SCOPES)}"
        )
    if request.scope == "all" and request.kind in ("session", "all"):
        raise MemlaneError(
            'scope "all" searches notes and topics of every project; '
            f'kind "{request.kind}" searches this project\'s sessions',
            "use one of them at a time",
        )
    if request.k is not None:
        check_k(request.k)
    if request.mode not in SEARCH_MODES:
        raise MemlaneError(
            f"unknown search mode {request.mode!r}", f"use one of: {', '.join(SEARCH_MODES)}"
        )
    for name, value in (("after", request.after), ("before", request.before)):
        if value is not None:
            check_date(name, value)
    if request.min_score is not None:
        check_min_score(request.min_score)


def check_k(k: int) -> None:
    """How many hits a search (or ``similar``) may ask for."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= SEARCH_K_MAX:
        raise MemlaneError(f"k must be between 1 and {SEARCH_K_MAX}, got {k}")


def check_min_score(floor: float) -> None:
    if not 0.0 <= floor <= 1.0:
        raise MemlaneError(
            f"min_score must be between 0 and 1, got {floor}",
            "0 returns every match; the default is search.min_score",
        )


def check_date(name: str, value: str) -> None:
    """A date bound that cannot match anything is a mistake worth saying."""
    for fmt in DATE_FORMATS:
        try:
            datetime.strptime(value, fmt)
            return
        except ValueError:
            continue
    raise MemlaneError(
        f"{name} {value!r} is not a date",
        "use YYYY-MM-DD, e.g. 2026-11-30 (or YYYY-MM-DDTHH:MM)",
    )


def search(memory: ProjectMemory, request: SearchRequest) -> Recalled:
    """Check *request* once, then answer it from the leg its kind and scope name."""
    check_request(request)
    route = request.route
    if route == "projects":
        from memlane.engine.recall.crossrepo import search_all

        fan_out = search_all(
            memory,
            request.query,
            request.k,
            kind=notes_kind(request.kind),
            after=request.after,
            before=request.before,
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


def notes_kind(kind: str | None) -> Kind | None:
    """The notes' kind filter: journal, topic, or None for both."""
    if kind == "journal":
        return "journal"
    if kind == "topic":
        return "topic"
    return None


def _with_k(memory: ProjectMemory, request: SearchRequest) -> SearchRequest:
    if request.k is not None:
        return request
    return replace(request, k=memory.config.session.search_top_k)


def _sessions(memory: ProjectMemory, request: SearchRequest) -> SearchResult:
    from memlane.engine.sessions.layer import search_sessions

    k = request.k or memory.config.sessions.recall_default_top_k
    return search_sessions(
        memory,
        request.query,
        k,
        mode=request.mode,
        session=request.session,
        after=request.after,
        before=request.before,
        role=request.role,
    ).at_least(memory.min_score(request.min_score))


def _everything(memory: ProjectMemory, request: SearchRequest) -> SearchResult:
    """Journal, topics and sessions in one list, merged by score (all in [0, 1])."""
    from memlane.engine.recall.notes import search_notes

    request = _with_k(memory, request)
    k = request.k or memory.config.session.search_top_k
    floor = memory.min_score(request.min_score)
    notes = search_notes(memory, replace(request, kind=None, min_score=floor))
    sessions = _sessions(memory, replace(request, min_score=floor))
    # One calibrated scale for every kind (index/relevance.py): merged by score.
    hits = sorted([*notes.hits, *sessions.hits], key=lambda h: -h.score)[:k]
    return SearchResult(
        query=request.query,
        mode=notes.mode,
        hits=hits,
        notices=[*notes.notices, *sessions.notices],
        min_score=floor,
        below_min_score=notes.below_min_score + sessions.below_min_score,
    )
