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
from memlane.hosts.web.render import (
    agent_label,
    error_box,
    esc,
    link,
    markdown_html,
    page,
    pager,
    url,
)

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
#: The date fields take what memory_search takes (core/bounds.py): a day, a
#: local time, or a time with its zone; a browser's date picker allows days only.
BOUND_FIELD = (
    ' placeholder="2026-12-03 or 2026-12-03T14:12:30Z" title="an ISO 8601 date or time: '
    "2026-12-03 (that local day), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z or "
    '2026-12-03T14:12:30+01:00"'
)
MESSAGES_PAGE = 50


def search(viewer: Viewer, params: Mapping[str, str]) -> str:
    query = params.get("q", "").strip()
    kind = params.get("kind", "")
    k = _bounded(params.get("k"), SEARCH_STEP, SEARCH_MAX)
    form = _search_form(params)
    if not query:
        return page("Search", form, active="/search")
    arguments: dict[str, Any] = {"query": query, "k": k}
    for name in ("after", "before", "session"):
        if params.get(name, "").strip():
            arguments[name] = params[name].strip()
    if kind:
        arguments["kind"] = kind
    floor = _min_score(params.get("min_score"))
    if floor is not None:
        arguments["min_score"] = floor
    if params.get("order") == "newest":
        arguments["order"] = "newest"
    try:
        details = viewer.tools.call("memory_search", arguments).details
    except MemlaneError as exc:
        # A bad date or time: said under the form, which keeps what was typed.
        return page("Search", form + error_box(exc.message, exc.hint), active="/search")
    hits: list[dict[str, Any]] = details.get("hits") or []
    if details.get("nothing_relevant") or not hits:
        shown = f'<p class="nothing">{esc(details.get("headline", "Nothing found."))}</p>'
        if details.get("below_min_score"):
            # Matches fell below the floor. "Search with min_score 0 to see
            # them anyway": that search, one click away.
            anyway = url("/search", {**params, "min_score": "0"})
            hint = details.get("next") or "Search with min_score 0 to see them anyway."
            shown += f'<p class="hint">{link(anyway, hint, class_="anyway")}</p>'
        elif details.get("next"):
            shown += f'<p class="hint">{esc(details["next"])}</p>'
    else:
        shown = f'<p class="summary">{esc(details.get("headline", ""))}</p>' + "".join(
            _hit(viewer, hit) for hit in hits
        )
        if len(hits) >= k and k < SEARCH_MAX:
            more = url("/search", {**params, "k": min(k + SEARCH_STEP, SEARCH_MAX)})
            shown += f'<p class="pager">{link(more, "more hits")}</p>'
    return page("Search", form + shown, active="/search", notices=details.get("notices") or ())


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


def _search_form(params: Mapping[str, str]) -> str:
    def select(name: str, choices: tuple[tuple[str, str], ...]) -> str:
        chosen = params.get(name, "")
        return "".join(
            f'<option value="{esc(v)}"{" selected" if chosen == v else ""}>{esc(label)}</option>'
            for v, label in choices
        )

    def field(name: str, label: str, kind: str = "text", extra: str = "") -> str:
        return (
            f'<label>{esc(label)} <input type="{kind}" name="{name}" '
            f'value="{esc(params.get(name, ""))}"{extra}></label>'
        )

    floor = _min_score(params.get("min_score"))

    return (
        f'<form class="search" method="get" action="{esc(url("/search"))}">'
        f'<input type="search" name="q" id="q" placeholder="what to look for" '
        f'value="{esc(params.get("q", ""))}" autofocus>'
        f'<label>kind <select name="kind">{select("kind", KINDS)}</select></label>'
        f'<label>order <select name="order">{select("order", ORDERS)}</select></label>'
        + field("after", "after", extra=BOUND_FIELD)
        + field("before", "before", extra=BOUND_FIELD)
        + field("session", "session")
        + (
            '<label>min score <input type="number" name="min_score" min="0" max="1" '
            f'step="0.01" value="{esc("" if floor is None else f"{floor:g}")}"></label>'
        )
        + '<button type="submit">Search</button></form>'
    )


def _in_store(viewer: Viewer, source: str) -> bool:
    store = viewer.memory.scope.store
    path = Path(source)
    return path.is_relative_to(store) or path.is_relative_to(store.resolve())


def _hit(viewer: Viewer, hit: Mapping[str, Any]) -> str:
    kind = str(hit.get("kind") or "journal")  # the engine's; unset only for another project
    chunk = str(hit["chunk_hash"])
    where = (
        f"{hit['source']}:{hit['start_line']}-{hit['end_line']}"
        if "start_line" in hit
        else f"{hit['source']} turn {hit.get('turn')}"
    )
    actions = []
    if kind != "session" and not _in_store(viewer, str(hit["source"])):
        # A chunk of a file this machine does not hold (a shared Milvus
        # collection: another machine's or project's store): shown as the
        # search returned it, with nothing to expand, open or forget here.
        note = '<span class="note">from another store: shown as found</span>'
        return _hit_article(hit, chunk, kind, where, note)
    if kind == "session":
        actions.append(agent_label(viewer.sessions.format_of(str(hit["source"]))))
        actions.append(
            f'<button type="button" class="transcript" data-path="{esc(hit["source"])}" '
            f'data-turn="{esc(hit.get("turn") or "")}">transcript</button>'
        )
    else:
        actions.append(
            f'<button type="button" class="expand" data-hash="{esc(chunk)}">expand</button>'
        )
    if kind == "journal":
        from memlane.store.layout import date_of

        day = date_of(Path(hit["source"]))
        if day is not None:
            actions.append(link(url(f"/day/{day}"), f"open {day}", class_="day"))
        actions.append(link(url("/forget", {"chunk_hash": chunk}), "forget…", class_="forget"))
    return _hit_article(hit, chunk, kind, where, " ".join(actions))


def _hit_article(hit: Mapping[str, Any], chunk: str, kind: str, where: str, actions: str) -> str:
    """One hit: score, band, kind, heading, when it was written, where it is
    from, whether it is outdated, its text and its actions (HTML)."""
    newer = str(hit.get("superseded_by") or "")
    return (
        f'<article class="hit" data-hash="{esc(chunk)}" data-kind="{esc(kind)}"'
        + (f' data-superseded-by="{esc(newer)}"' if newer else "")
        + f'><header><span class="score">{float(hit["score"]):.3f}</span>{_band(hit)}'
        f'<span class="kind">{esc(kind)}</span><strong>{esc(hit.get("heading") or "")}</strong>'
        f'{_when(hit)}<span class="where">{esc(where)}</span></header>'
        + (
            f'<p class="outdated"><strong>outdated</strong> — superseded by '
            f"{link(url('/expand', {'hash': newer}), f'the newer memory {newer}', class_='newer')}"
            "</p>"
            if newer
            else ""
        )
        + f'<div class="content">{markdown_html(str(hit.get("content", "")))}</div>'
        f'<div class="actions">{actions}</div><div class="more"></div></article>'
    )


def _band(hit: Mapping[str, Any]) -> str:
    band = str(hit.get("band") or "")
    if not band:
        return ""
    known = band if band in BANDS else "other"
    return f'<span class="band band-{known}" title="how far to trust this hit">{esc(band)}</span>'


def _when(hit: Mapping[str, Any]) -> str:
    """``2026-03-02 09:12 · 12 days ago`` (core/render.py's when_written, as HTML)."""
    date = str(hit.get("date") or "")
    if not date:
        return ""
    age = hit.get("age_days")
    ago = ""
    if isinstance(age, int):
        ago = " · today" if age == 0 else f" · {age} day{'' if age == 1 else 's'} ago"
    return f'<time class="when" datetime="{esc(date)}">{esc(date.replace("T", " ") + ago)}</time>'


def expand_page(viewer: Viewer, chunk_hash: str) -> str:
    """A memory's whole section on its own page (where "outdated" links to)."""
    return page("Memory", expand_fragment(viewer, chunk_hash), active="/search")


def expand_fragment(viewer: Viewer, chunk_hash: str) -> str:
    """L2: the section of a hit, with a button for its conversation when anchored."""
    details = viewer.tools.call("memory_expand", {"chunk_hash": chunk_hash}).details
    anchor = details.get("anchor") or {}
    button = ""
    if anchor.get("transcript") and "next" in details:
        button = (
            f'<button type="button" class="transcript" data-path="{esc(anchor["transcript"])}" '
            f'data-turn="{esc(anchor.get("turn") or "")}">transcript</button>'
        )
    return (
        f'<section class="section l2"><p class="where">{esc(details["source"])}:'
        f"{details['start_line']}-{details['end_line']}</p>"
        f"{markdown_html(details['content'])}"
        f'<div class="actions">{button}</div><div class="more"></div></section>'
    )


def transcript_fragment(viewer: Viewer, path: str, turn: str | None) -> str:
    """L3: the turns around an anchor (memory_transcript's window)."""
    arguments = {"transcript_path": path, **({"turn": turn} if turn else {})}
    details = viewer.tools.call("memory_transcript", arguments).details
    turns = "".join(
        f'<div class="turn role-{esc(t["role"])}{" target" if t.get("is_target") else ""}">'
        f'<span class="role">{esc(t["role"])}</span>'
        f'<span class="time">{esc(t.get("time") or "")}</span>'
        f'<pre class="text">{esc(t.get("text") or "")}</pre></div>'
        for t in details.get("turns") or []
    )
    return (
        f'<section class="transcript l3"><p class="where">{esc(details.get("headline", ""))}</p>'
        f"{turns or '<p class=empty>No turns.</p>'}</section>"
    )


def transcript_page(viewer: Viewer, path: str, turn: str | None) -> str:
    return page("Transcript", transcript_fragment(viewer, path, turn))


def sessions(viewer: Viewer, page_no: int) -> str:
    start = (page_no - 1) * SESSIONS_PAGE
    infos = viewer.sessions.recent(SESSIONS_PAGE + 1, offset=start)
    more = len(infos) > SESSIONS_PAGE
    rows = "".join(
        f"<tr><td>{link(url('/session', {'transcript': info.transcript}), info.session_id)}</td>"
        f"<td>{agent_label(info.format)}</td><td>{esc(info.first_at or '')}</td><td>{esc(info.last_at or '')}</td>"
        f"<td>{info.messages}</td><td>{esc(info.first_user[:200])}</td></tr>"
        for info in infos[:SESSIONS_PAGE]
    )
    form = (
        f'<form class="search" method="get" action="{esc(url("/search"))}"><input type="hidden" name="kind" '
        'value="session"><input type="search" name="q" placeholder="search past messages">'
        '<button type="submit">Search sessions</button></form>'
    )
    table = (
        '<table class="sessions"><tr><th>session</th><th>agent</th><th>first</th><th>last</th>'
        f"<th>messages</th><th>first ask</th></tr>{rows}</table>"
        if rows
        else "<p class=empty>No past sessions of this project were found.</p>"
    )
    return page(
        "Sessions", form + table + pager("/sessions", {}, page_no, more), active="/sessions"
    )


def session(viewer: Viewer, transcript: str, page_no: int) -> str:
    layer = viewer.sessions
    total = layer.message_count(transcript)
    start = (page_no - 1) * MESSAGES_PAGE
    shown = layer.messages_of(transcript, MESSAGES_PAGE, offset=start)
    title = f"Session {shown[0].session_id}" if shown and shown[0].session_id else "Session"
    rows = "".join(
        f'<div class="turn role-{esc(d.role)}"><span class="role">{esc(d.role)}</span>'
        f'<span class="time">{esc(d.timestamp or "")}</span>'
        f"{link(url('/transcript', {'path': d.transcript, 'turn': d.entry_id}), 'context')}"
        f'<pre class="text">{esc(d.text)}</pre></div>'
        for d in shown
    )
    body = (
        f'<p class="where">{agent_label(layer.format_of(transcript))} '
        f"{esc(transcript)}: {total} messages</p>"
        + (rows or "<p class=empty>No messages of this transcript are indexed.</p>")
        + pager("/session", {"transcript": transcript}, page_no, total > start + MESSAGES_PAGE)
    )
    return page(title, body, active="/sessions")
