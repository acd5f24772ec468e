"""The recall pages: the search ladder (L1 hits, L2 sections and L3 turns
inline), a memory's section on its own page, a transcript, and the past
sessions of the project.

Each hit says how far to trust it: its band, when it was written and how
long ago, and, when a newer memory replaced it, "outdated" with a link to
that one (engine/recall/trust.py).

Search, expand and transcript go through the agent tools' dispatch
(engine/tools/dispatch.py): the same checks, redaction and results as
memory_search, memory_expand and memory_transcript over MCP.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.hosts.web.render import render, url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.hosts.web.viewer import Viewer

KINDS = (
    ("", "notes"),
    ("journal", "journal"),
    ("topic", "topics"),
    ("session", "sessions"),
    ("all", "everything"),
)
ORDERS = (("relevance", "relevance"), ("newest", "newest first"))
BANDS = ("strong", "possible", "weak")
#: Hits a search shows first; "more" asks for this many more, up to the tools' 100.
SEARCH_STEP = 10
SEARCH_MAX = 100
SESSIONS_PAGE = 25
MESSAGES_PAGE = 50
#: Entries a session's page lists (its latest); the rest are counted.
SESSION_ENTRIES = 50


def search(viewer: Viewer, params: Mapping[str, str], fragment: bool = False) -> str:
    """The search page, or (*fragment*) only its results: what the page's
    script puts under the form as the person types."""
    page = "search_results.html" if fragment else "search.html"
    query = params.get("q", "").strip()
    kind = params.get("kind", "")
    k = _bounded(params.get("k"), SEARCH_STEP, SEARCH_MAX)
    shown: dict[str, Any] = {
        "title": "Search",
        "active": "/search",
        "params": params,
        "kinds": KINDS,
        "orders": ORDERS,
        "floor": _min_score(params.get("min_score")),
        "asked": bool(query),
        "error": None,
        "hits": [],
    }
    if not query:
        return render(page, **shown)
    arguments: dict[str, Any] = {"query": query, "k": k}
    for name in ("after", "before", "session"):
        if params.get(name, "").strip():
            arguments[name] = params[name].strip()
    if kind:
        arguments["kind"] = kind
    if shown["floor"] is not None:
        arguments["min_score"] = shown["floor"]
    if params.get("order") == "newest":
        arguments["order"] = "newest"
    try:
        details = viewer.tools.call("memory_search", arguments).details
    except MemlaneError as exc:
        # A bad date or time: said under the form, which keeps what was typed.
        return render(page, **{**shown, "error": exc})
    hits: list[dict[str, Any]] = details.get("hits") or []
    if details.get("nothing_relevant") or not hits:
        below = bool(details.get("below_min_score"))
        anyway = "Search with min_score 0 to see them anyway." if below else None
        return render(
            page,
            **shown,
            headline=details.get("headline", "Nothing found."),
            anyway=url("/search", {**params, "min_score": "0"}) if below else None,
            hint=details.get("next") or anyway,
            notices=details.get("notices") or (),
        )
    more = len(hits) >= k and k < SEARCH_MAX
    return render(
        page,
        **{**shown, "hits": [hit_view(viewer, hit) for hit in hits]},
        headline=details.get("headline", ""),
        more=url("/search", {**params, "k": min(k + SEARCH_STEP, SEARCH_MAX)}) if more else None,
        notices=details.get("notices") or (),
    )


def _bounded(raw: str | None, default: int, top: int) -> int:
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = default
    return max(1, min(value, top))


def _min_score(raw: str | None) -> float | None:
    """The asked floor, when it is a score (0 to 1); anything else asks for none."""
    try:
        value = float(raw) if raw and raw.strip() else None
    except ValueError:
        return None
    return value if value is not None and 0.0 <= value <= 1.0 else None


def _in_store(viewer: Viewer, source: str) -> bool:
    store = viewer.memory.scope.store
    path = Path(source)
    return path.is_relative_to(store) or path.is_relative_to(store.resolve())


def hit_view(viewer: Viewer, hit: Mapping[str, Any]) -> dict[str, Any]:
    """What templates/_hit.html shows of one hit of memory_search."""
    from memlane.store.layout import date_of

    kind = str(hit.get("kind") or "journal")  # the engine's; unset only for another project
    source = str(hit["source"])
    band = str(hit.get("band") or "")
    age = hit.get("age_days")
    ago = ""
    if isinstance(age, int):  # ``2026-03-02 09:12 · 12 days ago`` (core/render.py's when_written)
        ago = " · today" if age == 0 else f" · {age} day{'' if age == 1 else 's'} ago"
    return {
        "chunk": str(hit["chunk_hash"]),
        "kind": kind,
        "score": float(hit["score"]),
        "band": band,
        "band_class": band if band in BANDS else "other",
        "heading": hit.get("heading") or "",
        "date": str(hit.get("date") or ""),
        "ago": ago,
        "where": (
            f"{source}:{hit['start_line']}-{hit['end_line']}"
            if "start_line" in hit
            else f"{source} turn {hit.get('turn')}"
        ),
        "newer": str(hit.get("superseded_by") or ""),
        "content": str(hit.get("content", "")),
        "foreign": kind != "session" and not _in_store(viewer, source),
        "source": source,
        "turn": hit.get("turn") or "",
        "agent": viewer.sessions.format_of(source) if kind == "session" else None,
        "day": date_of(Path(source)) if kind == "journal" else None,
    }


def expand_page(viewer: Viewer, chunk_hash: str) -> str:
    """A memory's whole section on its own page (where "outdated" links to)."""
    return render(
        "expand_page.html", title="Memory", active="/search", **_expand(viewer, chunk_hash)
    )


def expand_fragment(viewer: Viewer, chunk_hash: str) -> str:
    """L2 under a hit: the section of a hit, with a button for its conversation
    when anchored. A hit that is its whole section (a journal entry, one
    topic entry) is not shown again: its neighbours in the file are, instead."""
    shown = _expand(viewer, chunk_hash)
    chunk = viewer.memory.index.get(chunk_hash.strip().lower())
    section = shown["section"]
    if chunk is not None and chunk.content.strip() == str(section.get("content", "")).strip():
        shown["around"] = _around(viewer, str(section["source"]), int(section["start_line"]))
        shown["whole"] = True
    return render("expand.html", **shown)


def _around(viewer: Viewer, source: str, start_line: int) -> dict[str, Any]:
    """The entries before and after the one starting at *start_line* of a daily file."""
    from memlane.engine.timeline import day_file
    from memlane.store.layout import date_of

    day = date_of(Path(source)) if _in_store(viewer, source) else None
    if day is None:
        return {"day": None, "before": None, "after": None}
    entries = [e for e in day_file(viewer.memory, day).entries if e.kind != "other"]
    at = max((i for i, e in enumerate(entries) if e.line <= start_line), default=-1)
    return {
        "day": day,
        "before": entries[at - 1] if at > 0 else None,
        "after": entries[at + 1] if 0 <= at < len(entries) - 1 else None,
    }


def _expand(viewer: Viewer, chunk_hash: str) -> dict[str, Any]:
    details = viewer.tools.call("memory_expand", {"chunk_hash": chunk_hash}).details
    anchor = details.get("anchor") or {}
    shown = anchor.get("transcript") and "next" in details
    return {"section": details, "anchor": anchor if shown else None, "whole": False}


def transcript_fragment(viewer: Viewer, path: str, turn: str | None) -> str:
    """L3: the turns around an anchor (memory_transcript's window)."""
    return render("transcript.html", **_transcript(viewer, path, turn))


def transcript_page(viewer: Viewer, path: str, turn: str | None) -> str:
    return render("transcript_page.html", title="Transcript", **_transcript(viewer, path, turn))


def _transcript(viewer: Viewer, path: str, turn: str | None) -> dict[str, Any]:
    arguments = {"transcript_path": path, **({"turn": turn} if turn else {})}
    details = viewer.tools.call("memory_transcript", arguments).details
    return {"headline": details.get("headline", ""), "turns": details.get("turns") or []}


def sessions(viewer: Viewer, page_no: int) -> str:
    """The project's sessions, newest first: each titled by its first ask,
    with its agent, its local times and the entries it produced."""
    from memlane.hosts.web.pages_home import local_time

    start = (page_no - 1) * SESSIONS_PAGE
    infos = viewer.recent_sessions(SESSIONS_PAGE + 1, offset=start)
    produced = viewer.session_entries.by_session()
    return render(
        "sessions.html",
        title="Sessions",
        active="/sessions",
        infos=infos[:SESSIONS_PAGE],
        local=lambda stamp: local_time(stamp or "", viewer) if stamp else "",
        produced={info.session_id: len(produced.get(info.session_id, ())) for info in infos},
        page_no=page_no,
        more=len(infos) > SESSIONS_PAGE,
    )


def session(viewer: Viewer, transcript: str, page_no: int) -> str:
    """One session: its first ask as the title, its agent and times, the
    entries it produced, then its messages a page at a time (local times)."""
    from memlane.hosts.web.pages_home import local_time

    layer = viewer.sessions
    total = layer.message_count(transcript)
    start = (page_no - 1) * MESSAGES_PAGE
    shown = layer.messages_of(transcript, MESSAGES_PAGE, offset=start)
    opening = layer.messages_of(transcript, 20) if page_no > 1 else shown
    first_ask = next((m.text for m in opening if m.role == "user"), "")
    session_id = next((m.session_id for m in opening if m.session_id), "")
    title = " ".join(first_ask.split())
    entries = viewer.session_entries.of(session_id) if session_id else []
    return render(
        "session.html",
        title=(title[:90] + "…" if len(title) > 90 else title) or f"Session {session_id}",
        active="/sessions",
        agent=layer.format_of(transcript),
        session_id=session_id,
        transcript=transcript,
        total=total,
        shown=shown,
        local=lambda stamp: local_time(stamp or "", viewer) if stamp else "",
        entries=entries[-SESSION_ENTRIES:][::-1],  # the latest first
        entries_total=len(entries),
        page_no=page_no,
        more=total > start + MESSAGES_PAGE,
    )
