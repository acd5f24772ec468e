"""The notes pages: the timeline, one day's file, the topics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.hosts.web.render import agent_label, esc, link, markdown_html, page, pager, url

if TYPE_CHECKING:
    from memlane.engine.timeline import DayCount, DayEntry
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


def timeline(viewer: Viewer, page_no: int) -> str:
    days = viewer.timeline.days()
    newest_first = days[::-1]
    start = (page_no - 1) * TIMELINE_DAYS
    shown = newest_first[start : start + TIMELINE_DAYS]
    more = len(newest_first) > start + TIMELINE_DAYS
    if not days:
        body = "<p class=empty>No memory yet: nothing was written to this project's store.</p>"
        return page("Timeline", body, active="/")
    totals = {name: sum(getattr(d, name) for d in days) for name, _ in SERIES}
    summary = ", ".join(f"{totals[name]} {label}" for name, label in SERIES)
    body = (
        f'<p class="summary">{len(days)} day{"s" if len(days) != 1 else ""} with memory: {esc(summary)}.</p>'
        + chart(shown[::-1])
        + _day_table(shown)
        + pager("/", {}, page_no, more)
    )
    return page("Timeline", body, active="/")


def chart(days: list[DayCount]) -> str:
    """Stacked bars, one per day with memory (oldest left), each a link to its
    day; a gap between days that are not consecutive is drawn and labelled
    with how many days without memory it stands for."""
    from datetime import date

    peak = max((d.journal + d.topics + d.messages for d in days), default=0) or 1
    parts = []
    x = 4
    previous: date | None = None
    for day in days:
        current = date.fromisoformat(day.day)
        skipped = (current - previous).days - 1 if previous is not None else 0
        if skipped > 0:
            label = f"{skipped} day{'s' if skipped != 1 else ''} without memory"
            parts.append(
                f'<g class="gap"><title>{esc(label)}</title>'
                f'<text x="{x + GAP_WIDTH // 2}" y="{CHART_HEIGHT - 4}" '
                f'text-anchor="middle">…</text></g>'
            )
            x += GAP_WIDTH
        previous = current
        parts.append(_bar(day, x, peak))
        x += BAR_WIDTH + 4
    width = max(x + 4, 120)
    span = esc(f"{days[0].day} → {days[-1].day}" if days else "")
    legend = "".join(f'<span class="key {name}"></span>{esc(label)} ' for name, label in SERIES)
    return (
        f'<figure class="chart"><svg id="timeline-chart" role="img" width="{width}" '
        f'height="{CHART_HEIGHT + 4}" viewBox="0 0 {width} {CHART_HEIGHT + 4}">'
        f"<title>memory per day</title>{''.join(parts)}</svg>"
        f"<figcaption>{span}: {legend}(peak {peak} a day; … marks days without memory)"
        "</figcaption></figure>"
    )


def _bar(day: DayCount, x: int, peak: int) -> str:
    y = CHART_HEIGHT
    rects = []
    for name, _label in SERIES:
        value = getattr(day, name)
        height = round(value / peak * (CHART_HEIGHT - 10))
        if value and height < 2:
            height = 2
        y -= height
        if height:
            rects.append(
                f'<rect class="bar {name}" x="{x}" y="{y}" width="{BAR_WIDTH}" '
                f'height="{height}"></rect>'
            )
    tip = f"{day.day}: {day.journal} journal, {day.topics} topics, {day.messages} messages"
    return (
        f'<a href="{esc(url("/day/" + day.day))}" class="day-bar" data-day="{esc(day.day)}">'
        f"<title>{esc(tip)}</title>"
        f'<rect class="hit" x="{x}" y="0" width="{BAR_WIDTH}" height="{CHART_HEIGHT}"></rect>'
        f"{''.join(rects)}</a>"
    )


def _day_table(days: list[DayCount]) -> str:
    rows = "".join(
        f"<tr><td>{link(url('/day/' + d.day), d.day)}</td><td>{d.journal}</td>"
        f"<td>{d.topics}</td><td>{d.messages}</td></tr>"
        for d in days
    )
    head = "".join(f"<th>{esc(label)}</th>" for _, label in SERIES)
    return f'<table class="days"><tr><th>day</th>{head}</tr>{rows}</table>'


def day(viewer: Viewer, day_name: str, page_no: int) -> str:
    from memlane.engine.timeline import day_file

    found = day_file(viewer.memory, day_name)
    sessions = _sessions_on(viewer, day_name)
    if not found.exists:
        body = f"<p class=empty>No daily file for {esc(day_name)} ({esc(found.path)}).</p>"
        return page(day_name, body + sessions, active="/")
    start = (page_no - 1) * DAY_ENTRIES
    entries = found.entries[start : start + DAY_ENTRIES]
    more = len(found.entries) > start + DAY_ENTRIES
    body = (
        f'<p class="summary">{len(found.entries)} entries in {esc(found.path)}</p>'
        + "".join(_entry(day_name, e) for e in entries)
        + pager(f"/day/{day_name}", {}, page_no, more)
        + sessions
    )
    return page(day_name, body, active="/")


def _sessions_on(viewer: Viewer, day_name: str) -> str:
    """The sessions with messages on that day (UTC), as links."""
    infos = viewer.sessions.on_day(day_name, DAY_SESSIONS + 1)
    if not infos:
        return ""
    items = "".join(
        f"<li>{link(url('/session', {'transcript': info.transcript}), info.session_id)} "
        f"{agent_label(info.format)}: "
        f"{info.messages} messages that day, {esc(info.first_user[:120])}</li>"
        for info in infos[:DAY_SESSIONS]
    )
    if len(infos) > DAY_SESSIONS:
        items += f"<li>… and more: the first {DAY_SESSIONS} are listed</li>"
    return f'<section class="day-sessions"><h2>Sessions that day</h2><ul>{items}</ul></section>'


def _entry(day_name: str, entry: DayEntry) -> str:
    links = []
    if entry.transcript and entry.transcript.strip() not in ("", "none"):
        links.append(
            link(
                url("/transcript", {"path": entry.transcript, "turn": entry.turn}),
                "transcript",
                class_="transcript-link",
            )
        )
    if entry.address:  # a hand-written section has none: no removal takes it
        links.append(
            link(
                url("/forget", {"date": day_name, "time": entry.address}),
                "forget…",
                class_="forget",
            )
        )
    session = f'<span class="session">session {esc(entry.session)}</span>' if entry.session else ""
    labels = {"compact": "compact", "other": "notes written by hand"}
    kind = f'<span class="kind">{labels[entry.kind]}</span>' if entry.kind in labels else ""
    return (
        f'<article class="entry" data-time="{esc(entry.address)}">'
        f'<header><span class="time">{esc(entry.time)}</span>{kind}{session}'
        f'<span class="links">{" ".join(links)}</span></header>'
        f"{markdown_html(entry.text)}</article>"
    )


def topics(viewer: Viewer) -> str:
    from memlane.engine.topics.ops import list_all
    from memlane.store.section import read_markdown
    from memlane.store.topics.index import memory_index_path

    store = viewer.memory.scope.store
    index = memory_index_path(store)
    memory_md = (
        markdown_html(read_markdown(index, store))
        if index.is_file()
        else "<p class=empty>No MEMORY.md yet.</p>"
    )
    infos = list_all(viewer.memory)
    rows = "".join(
        f"<tr><td>{link(url('/topics/' + info.slug), info.name)}</td><td>{esc(info.type)}</td>"
        f"<td>{esc(info.description)}</td><td>{len(info.titles)}</td><td>{esc(info.updated)}</td></tr>"
        for info in infos
    )
    table = (
        '<table class="topics"><tr><th>topic</th><th>type</th><th>description</th>'
        f"<th>entries</th><th>updated</th></tr>{rows}</table>"
        if infos
        else "<p class=empty>No topic files yet.</p>"
    )
    body = f'<section class="memory-md"><h2>MEMORY.md</h2>{memory_md}</section><h2>Topic files</h2>{table}'
    return page("Topics", body, active="/topics")


def topic(viewer: Viewer, slug: str) -> str:
    from memlane.store.topics.operations import read_topic

    parsed = read_topic(viewer.memory.scope.store, slug)
    front = "".join(f"<li>{esc(line.rstrip())}</li>" for line in parsed.front if line.strip())
    entries = "".join(
        f'<article class="entry topic-entry"><h2>{esc(e.title)}</h2>{markdown_html(e.body)}</article>'
        for e in parsed.entries
    )
    body = (
        f'<ul class="front">{front}</ul>'
        + (markdown_html(parsed.preamble) if parsed.preamble.strip() else "")
        + (entries or "<p class=empty>No entries.</p>")
    )
    return page(f"Topic {slug}", body, active="/topics")
