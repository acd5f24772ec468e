"""A search request and its checks: what every caller of the router hands it.

Kept apart from the router (recall/router.py) so that the legs it calls can
use the same checks and kinds without importing the router back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import tzinfo
from typing import Literal

from memlane.core.bounds import Bound, parse_range
from memlane.core.errors import MemlaneError
from memlane.core.settings import SEARCH_K_MAX
from memlane.core.types import Kind, SearchKind, SearchMode, SearchOrder, SearchScope

SEARCH_MODES = ("hybrid", "lexical", "semantic")
SEARCH_KINDS = ("journal", "topic", "session", "all")
SEARCH_SCOPES = ("project", "all")
#: How hits are ordered: best match first, or newest first (each hit dated).
SEARCH_ORDERS = ("relevance", "newest")

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
    ``wait_for_model``: False (an agent's ``memory_search`` in a session)
    answers a hybrid search from the lexical leg, and says so, while another
    thread is still loading the model, instead of waiting for it.
    ``catch_up``: False (with ``sync`` False) searches the index as it
    stands, without indexing this process's fresh writes first: a capture's
    look for earlier memories, which runs after every capture and would
    otherwise re-read the day's file each time.
    ``outside_notes`` / ``outside_sessions``: a session's search before its
    start's catch-up of that part is done also indexes what other processes
    wrote since the index last saw it (notes changed on disk, new transcript
    bytes), within a budget, or says that memory is catching up
    (journal/catch_up.py, sessions/catch_up.py).
    """

    query: str
    k: int | None = None
    kind: SearchKind | None = None
    scope: SearchScope = "project"
    after: str | None = None
    before: str | None = None
    session: str | None = None
    source_prefix: str | None = None
    role: str | None = None
    mode: SearchMode = "hybrid"
    min_score: float | None = None
    sync: bool = True
    env: Mapping[str, str] | None = None
    wait_for_model: bool = True
    order: SearchOrder = "relevance"
    catch_up: bool = True
    outside_notes: bool = False
    outside_sessions: bool = False

    def bounds(self, zone: tzinfo | None = None) -> tuple[Bound | None, Bound | None]:
        """``after`` and ``before`` read as moments (core/bounds.py); a time
        without a zone is local time in *zone* (the memory's clock's)."""
        return parse_range(self.after, self.before, zone)

    def note_bounds(self, zone: tzinfo | None = None) -> tuple[str | None, str | None]:
        """The bounds as the notes index compares them (local, to the minute)."""
        after, before = self.bounds(zone)
        return (
            None if after is None else after.note_key,
            None if before is None else before.note_key,
        )

    def floor(self, default: float) -> float:
        """The score floor the hits are held to: ``min_score`` (checked with the
        request, ``check_request``) or *default* (``search.min_score``, checked
        when the configuration was read)."""
        return default if self.min_score is None else self.min_score

    @property
    def route(self) -> Route:
        if self.scope == "all":
            return "projects"
        if self.kind == "session":
            return "sessions"
        if self.kind == "all":
            return "everything"
        return "notes"


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
    check_mode(request.mode)
    if request.role is not None:
        check_role(request.role)
    request.bounds()  # a bad date or time, or an empty range, is said here
    if request.min_score is not None:
        check_min_score(request.min_score)
    if request.order not in SEARCH_ORDERS:
        raise MemlaneError(
            f"unknown order {request.order!r}",
            f"use one of: {', '.join(SEARCH_ORDERS)} (relevance is the default)",
        )


def check_k(k: int) -> None:
    """How many hits a search (or ``similar``) may ask for."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= SEARCH_K_MAX:
        raise MemlaneError(
            f"k must be between 1 and {SEARCH_K_MAX}, got {k}",
            "ask for fewer hits, or leave k out for the default (search.top_k)",
        )


def check_mode(mode: str) -> None:
    if mode not in SEARCH_MODES:
        raise MemlaneError(
            f"unknown search mode {mode!r}", f"use one of: {', '.join(SEARCH_MODES)}"
        )


def check_role(role: str) -> None:
    """A sessions search's role filter: one of the roles the sessions index stores."""
    from memlane.index.session_docs import ROLES

    if role not in ROLES:
        raise MemlaneError(f"unknown role {role!r}", f"use one of: {', '.join(ROLES)}")


def check_min_score(floor: float) -> None:
    if not 0.0 <= floor <= 1.0:
        raise MemlaneError(
            f"min_score must be between 0 and 1, got {floor}",
            "0 returns every match; the default is search.min_score",
        )


def notes_kind(kind: str | None) -> Kind | None:
    """The notes' kind filter: journal, topic, or None for both."""
    if kind == "journal":
        return "journal"
    if kind == "topic":
        return "topic"
    return None
