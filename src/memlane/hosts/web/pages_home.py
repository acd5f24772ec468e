"""The first page: the newest memories (journal entries, topic changes,
sessions) under a search box, with the timeline beside them.

The feed reads only what it shows: the newest daily files (one ``stat`` per
file, from the timeline's counts), the topic files' ``updated`` dates and
the sessions index's newest rows, so it costs the same at ten entries as at
ten thousand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memlane.hosts.web.pages_notes import SERIES, TIMELINE_DAYS, chart
from memlane.hosts.web.render import ago, render

if TYPE_CHECKING:
    from memlane.hosts.web.viewer import Viewer

#: Memories the first page lists (journal entries, topics and sessions together).
FEED_ITEMS = 20
#: At most this many of them are topic files, and this many sessions.
FEED_TOPICS = 5
FEED_SESSIONS = 5


@dataclass(frozen=True)
class Item:
    """One memory of the feed: what it is, when it was written, its text and links."""

    kind: str  # "journal", "topic" or "session"
    when: str  # ``YYYY-MM-DD HH:MM`` (local), or a bare day
    ago: str  # "today", "3 days ago"
    title: str
    text: str  # memory markdown (journal, topic) or plain text (session)
    href: str  # where the item opens
    day: str = ""
    address: str = ""  # a journal entry's forget address (``HH:MM#N``)
    transcript: str = ""
    turn: str = ""
    agent: str | None = None


@dataclass(frozen=True)
class IndexState:
    """How far the search index has come with the store (the first page's line)."""

    chunks: int  # sections searchable now
    waiting: int  # new sections in files changed since they were indexed
    files_waiting: int
    vectors_waiting: int  # sections found by words only until the model embeds them


def index_state(viewer: Viewer) -> IndexState | None:
    """The index against the store, as an indexer's plan sees it (a stat per
    file, a read of each changed one); None when the index cannot be read
    (the Health page says why)."""
    import sqlite3

    from memlane.core.errors import MemlaneError
    from memlane.engine.journal.indexer import indexer_of

    memory = viewer.memory
    try:
        stats = memory.index.stats()
        plan = indexer_of(memory).plan()
    except (MemlaneError, OSError, sqlite3.Error):
        return None
    chunks = int(stats.get("chunks") or 0)
    # Without an embedding model (provider "none") every section is found by words.
    vectors = stats.get("vectors") if memory.config.embedding.provider != "none" else chunks
    return IndexState(
        chunks=chunks,
        waiting=sum(len(item.new) for item in plan.pending),
        files_waiting=len(plan.pending) + len(plan.gone),
        vectors_waiting=max(0, chunks - int(vectors)) if isinstance(vectors, int) else 0,
    )


def home(viewer: Viewer, page_no: int) -> str:
    return render("home.html", title="Memory", active="/", **_shown(viewer, page_no))


def home_fragment(viewer: Viewer, page_no: int) -> str:
    """The page's live part alone (what its script fetches when the store changes)."""
    return render("home_body.html", **_shown(viewer, page_no))


def _shown(viewer: Viewer, page_no: int) -> dict[str, Any]:
    days = viewer.timeline.days()
    newest_first = days[::-1]
    start = (page_no - 1) * TIMELINE_DAYS
    shown = newest_first[start : start + TIMELINE_DAYS]
    totals = {name: sum(getattr(d, name) for d in days) for name, _ in SERIES}
    return dict(
        feed=feed(viewer, [d.day for d in newest_first if d.journal]),
        index=index_state(viewer),
        total_days=len(days),
        summary=", ".join(f"{totals[name]} {label}" for name, label in SERIES),
        chart=chart(shown[::-1]),
        shown=shown,
        series=SERIES,
        page_no=page_no,
        more=len(newest_first) > start + TIMELINE_DAYS,
    )


def feed(viewer: Viewer, journal_days: list[str]) -> list[Item]:
    """The newest memories, newest first (*journal_days*: the days with
    journal entries, newest first)."""
    from memlane.engine.timeline import day_file
    from memlane.engine.topics.ops import list_all
    from memlane.hosts.web.render import url

    today = viewer.memory.clock.today()
    items: list[Item] = []
    for day in journal_days:
        found = day_file(viewer.memory, day)
        for entry in reversed(found.entries):
            if entry.kind == "other":
                continue
            items.append(
                Item(
                    kind="journal",
                    when=f"{day} {entry.time}",
                    ago=ago(day, today),
                    title="compact" if entry.kind == "compact" else "",
                    text=entry.text,
                    href=url(f"/day/{day}"),
                    day=day,
                    address=entry.address,
                    transcript=entry.transcript or "",
                    turn=entry.turn or "",
                )
            )
        if len(items) >= FEED_ITEMS:
            break
    topics = sorted(list_all(viewer.memory), key=lambda t: t.updated, reverse=True)
    for info in topics[:FEED_TOPICS]:
        latest = ", ".join(info.titles[-3:])
        items.append(
            Item(
                kind="topic",
                when=info.updated.strip().replace("T", " ")[:16],
                ago=ago(info.updated.strip(), today),
                title=info.name,
                text=f"{info.description}\n\nlatest: {latest}" if latest else info.description,
                href=url(f"/topics/{info.slug}"),
            )
        )
    for session in viewer.recent_sessions(FEED_SESSIONS):
        last = local_time(session.last_at or session.first_at or "", viewer)
        items.append(
            Item(
                kind="session",
                when=last,
                ago=ago(last, today),
                title=session.session_id,
                text=session.first_user[:300],
                href=url("/session", {"transcript": session.transcript}),
                agent=session.format,
            )
        )
    items.sort(key=lambda item: item.when, reverse=True)
    return items[:FEED_ITEMS]


def local_time(stamp: str, viewer: Viewer) -> str:
    """A transcript's timestamp (``…T09:31:00.000Z``) as ``YYYY-MM-DD HH:MM``
    in the memory's local time; as given when it is not one."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp[:16].replace("T", " ")
    if moment.tzinfo is not None:
        zone = viewer.memory.clock.zone()
        moment = moment.astimezone(zone) if zone is not None else moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M")
