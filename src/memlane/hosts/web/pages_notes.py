"""The notes pages: the timeline's chart, one day's file, the topics (templates/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlane.hosts.web.render import ago, render

if TYPE_CHECKING:
    from memlane.engine.timeline import DayCount
    from memlane.hosts.web.viewer import Viewer

#: Days in one page of the timeline (its chart and its table).
TIMELINE_DAYS = 60
#: Entries in one page of a day.
DAY_ENTRIES = 50
#: Sessions a day page lists (the ones with that day's latest messages first).
DAY_SESSIONS = 50
SERIES = (("journal", "journal entries"), ("topics", "topics changed"), ("messages", "messages"))
CHART_HEIGHT = 160
BAR_WIDTH = 14
#: The room a run of days without memory takes in the chart.
GAP_WIDTH = 16


@dataclass(frozen=True)
class Gap:
    """A run of days without memory in the chart: ``…`` at *x*, *label* as its tooltip."""

    x: int
    label: str
    kind: str = "gap"


@dataclass(frozen=True)
class Bar:
    """One day's stacked bar at *x*: its (series, y, height) rectangles, bottom up."""

    day: str
    x: int
    tip: str
    rects: tuple[tuple[str, int, int], ...]
    kind: str = "bar"


@dataclass(frozen=True)
class Chart:
    items: tuple[Gap | Bar, ...]
    width: int
    peak: int
    span: str
    height: int = CHART_HEIGHT
    bar_width: int = BAR_WIDTH


def chart(days: list[DayCount]) -> Chart:
    """Stacked bars, one per day with memory (oldest left), each a link to its
    day; a gap between days that are not consecutive is drawn and labelled
    with how many days without memory it stands for."""
    from datetime import date

    peak = max((d.journal + d.topics + d.messages for d in days), default=0) or 1
    items: list[Gap | Bar] = []
    x = 4
    previous: date | None = None
    for day in days:
        current = date.fromisoformat(day.day)
        skipped = (current - previous).days - 1 if previous is not None else 0
        if skipped > 0:
            label = f"{skipped} day{'s' if skipped != 1 else ''} without memory"
            items.append(Gap(x + GAP_WIDTH // 2, label))
            x += GAP_WIDTH
        previous = current
        items.append(_bar(day, x, peak))
        x += BAR_WIDTH + 4
    span = f"{days[0].day} → {days[-1].day}" if days else ""
    return Chart(tuple(items), width=max(x + 4, 120), peak=peak, span=span)


def _bar(day: DayCount, x: int, peak: int) -> Bar:
    y = CHART_HEIGHT
    rects = []
    for name, _label in SERIES:
        value = getattr(day, name)
        height = round(value / peak * (CHART_HEIGHT - 10))
        if value and height < 2:
            height = 2
        y -= height
        if height:
            rects.append((name, y, height))
    tip = f"{day.day}: {day.journal} journal, {day.topics} topics, {day.messages} messages"
    return Bar(day.day, x, tip, tuple(rects))


def day(viewer: Viewer, day_name: str, page_no: int) -> str:
    from memlane.engine.timeline import day_file

    found = day_file(viewer.memory, day_name)
    start = (page_no - 1) * DAY_ENTRIES
    return render(
        "day.html",
        title=day_name,
        active="/",
        day_name=day_name,
        ago=ago(day_name, viewer.memory.clock.today()),
        found=found,
        entries=found.entries[start : start + DAY_ENTRIES] if found.exists else [],
        more=len(found.entries) > start + DAY_ENTRIES,
        page_no=page_no,
        # The sessions with messages on that day (UTC).
        sessions=viewer.sessions.on_day(day_name, DAY_SESSIONS + 1),
        session_limit=DAY_SESSIONS,
    )


def topics(viewer: Viewer) -> str:
    from memlane.engine.topics.ops import list_all
    from memlane.store.section import read_markdown
    from memlane.store.topics.index import memory_index_path

    store = viewer.memory.scope.store
    index = memory_index_path(store)
    return render(
        "topics.html",
        title="Topics",
        active="/topics",
        memory_md=read_markdown(index, store) if index.is_file() else None,
        infos=list_all(viewer.memory),
    )


def topic(viewer: Viewer, slug: str) -> str:
    from memlane.store.topics.operations import read_topic

    parsed = read_topic(viewer.memory.scope.store, slug)
    return render(
        "topic.html",
        title=f"Topic {slug}",
        active="/topics",
        front=[line.rstrip() for line in parsed.front if line.strip()],
        topic=parsed,
    )
