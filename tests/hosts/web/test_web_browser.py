"""The viewer in a real browser: `memlane ui` as a process, Chromium driving it.

One server (a real ``memlane ui`` process over the store of _web.py) and one
browser serve every test of this module; tests run in file order and the
forget test, which changes the store, comes last before Ctrl-C. Each test
saves a screenshot of each page it opens under its tmp dir and checks that
it is not blank (png.py counts the colours in it).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _served import Running, serve_ui
from _web import SESSION_ID
from png import changed_fraction, distinct_colours, pixels_of_colour

pytestmark = pytest.mark.e2e

#: A page with text, a chart or a form shows hundreds of colours; a blank page one.
MIN_COLOURS = 16
VIEWPORT = {"width": 1000, "height": 700}
#: The journal bars' fill (static/app.css, --journal).
JOURNAL_BAR_RGB = (0x2F, 0x6F, 0xBA)
#: A page's screenshot must differ from the 403 page's in at least this share
#: of its pixels (a refusal is one line of text on white).
MIN_CHANGED = 0.02


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with serve_ui(tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def refused_shot(browser: Any, server: Running, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A screenshot of the 403 page, what no page's screenshot may look like."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        tab = context.new_page()
        answer = tab.goto(server.origin + "/")
        assert answer is not None and answer.status == 403
        path = tmp_path_factory.mktemp("refused") / "refused.png"
        tab.screenshot(path=str(path))
        return path
    finally:
        context.close()


@pytest.fixture
def page(browser: Any, server: Running) -> Iterator[Any]:
    """A fresh browser context, signed in by opening the printed URL."""
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    answer = tab.goto(server.url)
    assert answer is not None and answer.status == 200
    yield tab
    context.close()


def shot(tab: Any, where: Path, name: str, refused: Path) -> Path:
    """A screenshot of the window under *where*, checked to show a page: not
    blank, and not the refusal page."""
    path = where / f"{name}.png"
    tab.screenshot(path=str(path))
    colours = distinct_colours(path)
    assert colours >= MIN_COLOURS, f"{name}.png looks blank ({colours} colours)"
    changed = changed_fraction(path, refused)
    assert changed >= MIN_CHANGED, f"{name}.png looks like the 403 page ({changed:.1%} differs)"
    return path


def test_the_viewer_opens_with_the_token_and_refuses_without_it(
    browser: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    stranger = browser.new_context()
    try:
        tab = stranger.new_page()
        answer = tab.goto(server.origin + "/")
        assert answer is not None and answer.status == 403
        assert "access token" in tab.inner_text("body")
        answer = tab.goto(server.origin + "/search?q=redis")
        assert answer is not None and answer.status == 403
    finally:
        stranger.close()
    signed_in = browser.new_context(viewport=VIEWPORT)
    try:
        tab = signed_in.new_page()
        answer = tab.goto(server.url)
        assert answer is not None and answer.status == 200
        # The navigation's links stay under the token prefix; no cookie is set.
        tab.click("nav >> text=Health")
        assert "Health" in tab.inner_text("h1")
        assert tab.url == server.base + "/health"
        assert signed_in.cookies() == []
        shot(tab, tmp_path, "health", refused_shot)
    finally:
        signed_in.close()


def test_the_first_page_shows_the_newest_memories_under_a_search_box(
    page: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    assert page.locator("#q").is_visible()
    newest = page.locator("section.feed article.feed-item").first
    assert "release checklist" in newest.inner_text()
    assert f"{server.store.today} 10:00 · today" in newest.locator("time.when").inner_text()
    assert page.locator("aside.side #timeline-chart").is_visible()
    shot(page, tmp_path, "home", refused_shot)
    page.fill("#q", "Redis cache TTLs")
    page.press("#q", "Enter")
    page.wait_for_url("**/search?q=Redis*")
    assert "moved the hot cache to Redis" in page.locator("article.hit").first.inner_text()


def test_the_timeline_renders_the_days_and_opens_one(
    page: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    bars = page.locator("#timeline-chart a.day-bar")
    assert bars.count() == 3  # two days of notes, one of session messages
    heights = page.eval_on_selector_all(
        "#timeline-chart rect.bar", "rects => rects.map(r => r.getBBox().height)"
    )
    assert heights and all(h > 0 for h in heights)
    timeline = shot(page, tmp_path, "timeline", refused_shot)
    # The chart is drawn: the journal bars' colour is on screen.
    assert pixels_of_colour(timeline, JOURNAL_BAR_RGB) >= 100
    page.locator(f'#timeline-chart a[data-day="{server.store.today}"]').click()
    page.wait_for_url(f"**/day/{server.store.today}")
    entries = page.locator("article.entry")
    assert entries.count() == 2
    assert f"session {SESSION_ID}" in entries.first.inner_text()
    shot(page, tmp_path, "day", refused_shot)


def test_search_then_expand_then_the_transcript_inline(
    page: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    page.goto(server.base + "/search")
    page.fill("#q", "Redis cache TTLs")
    page.click("form.search button[type=submit]")
    hit = page.locator("article.hit").first
    assert hit.get_attribute("data-kind") == "journal"
    assert float(hit.locator(".band").get_attribute("data-score") or 0) > 0
    hit.locator("button.expand").click()
    section = hit.locator(".more section.l2")
    section.wait_for()
    assert "moved the hot cache to Redis" in section.inner_text()
    section.locator("button.transcript").click()
    target = section.locator(".more .turn.target")
    target.wait_for()
    assert "5 minute TTLs for the Redis cache keys" in target.inner_text()
    shot(page, tmp_path, "search", refused_shot)
    page.goto(server.base + "/search?q=kubernetes+helm+rollout")
    assert page.locator("p.nothing").count() == 1
    # Below a floor: the hint is the search that shows them anyway.
    page.goto(server.base + "/search?q=release+checklist&kind=journal&min_score=1")
    assert page.locator("p.nothing").count() == 1
    page.click("p.hint a.anyway")
    hit = page.locator("article.hit").first
    assert "docs/release.md" in hit.inner_text()
    assert hit.locator(".band").inner_text() in ("strong", "possible", "weak")
    assert page.input_value("input[name=min_score]") == "0"


def test_topics_and_sessions_show_their_content(
    page: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    page.goto(server.base + "/topics")
    assert "MEMORY.md" in page.inner_text("main")
    shot(page, tmp_path, "topics", refused_shot)
    page.click("table.topics >> text=deploys")
    assert "billing cron" in page.inner_text("main")
    shot(page, tmp_path, "topic", refused_shot)
    page.goto(server.base + "/sessions")
    assert SESSION_ID in page.inner_text("table.sessions")
    shot(page, tmp_path, "sessions", refused_shot)
    page.click(f"text={SESSION_ID}")
    assert "idempotency key" in page.inner_text("main")
    shot(page, tmp_path, "session", refused_shot)


def test_forget_asks_first_then_removes_the_entry_from_the_file(
    page: Any, server: Running, tmp_path: Path, refused_shot: Path
) -> None:
    daily = server.store.store / f"{server.store.today}.md"
    assert "moved the hot cache to Redis" in daily.read_text(encoding="utf-8")
    page.goto(server.base + f"/day/{server.store.today}")
    entry = page.locator("article.entry", has_text="moved the hot cache to Redis")
    entry.locator("a.forget").click()
    shown = page.locator("pre.removed").inner_text()
    assert "moved the hot cache to Redis" in shown
    assert "release checklist" not in shown
    shot(page, tmp_path, "forget-confirm", refused_shot)
    # Only asked so far: the file is untouched.
    assert "moved the hot cache to Redis" in daily.read_text(encoding="utf-8")
    page.click("#confirm-forget")
    page.wait_for_selector("p.ok")
    assert "Removed from" in page.inner_text("p.ok")
    shot(page, tmp_path, "forgotten", refused_shot)
    text = daily.read_text(encoding="utf-8")
    assert "moved the hot cache to Redis" not in text
    assert "release checklist" in text


def test_ctrl_c_stops_the_viewer_cleanly(server: Running) -> None:
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(timeout=30) == 0
    output = server.output_after_exit()
    assert "memlane ui: stopped" in output
    assert "Traceback" not in output
