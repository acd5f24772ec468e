"""The viewer's live side in a real browser: `memlane ui` as a process,
Chromium driving it. A new entry shows on the open first page without a
reload (and the index catching up with it), search as you type, the "/" shortcut, dark mode and its toggle, a
phone-sized screen, and trust marks on a search of contradicting entries.

Entries are written to the store by this process (a second writer, as an
agent is) while the page is open. Waits are Playwright's own (it polls the
page until the condition holds); nothing here measures time.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _served import Running, serve_ui
from png import distinct_colours, read_png

from helpers import NOW, FixedClock, open_memory

pytestmark = pytest.mark.e2e

VIEWPORT = {"width": 1000, "height": 700}
PHONE = {"width": 390, "height": 844}
#: A page with text shows hundreds of colours; a blank page one.
MIN_COLOURS = 16
#: Generous: Playwright returns as soon as the page shows it (the 2 s target
#: is measured by benchmarks/bench_ui.py, not asserted here).
WAIT_MS = 15_000
#: The pages' background (static/app.css --bg), light and dark.
LIGHT_BG = (0xF7, 0xF8, 0xFA)
DARK_BG = (0x14, 0x18, 0x1D)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with serve_ui(tmp_path_factory) as running:
        yield running


@pytest.fixture
def page(browser: Any, server: Running) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    answer = tab.goto(server.url)
    assert answer is not None and answer.status == 200
    yield tab
    context.close()


def _write(server: Running, text: str, supersedes: tuple[str, ...] = ()) -> None:
    memory = open_memory(server.project, clock=FixedClock(NOW))
    try:
        memory.write(text, supersedes=supersedes)
        memory.sync()
    finally:
        memory.close()


def _hash_of(server: Running, words: str) -> str:
    memory = open_memory(server.project, clock=FixedClock(NOW))
    try:
        memory.sync()
        hits = memory.search(words, 10, min_score=0.0).hits
        return next(h.chunk_hash for h in hits if words in h.content)
    finally:
        memory.close()


def _background(path: Path) -> tuple[int, int, int]:
    """The colour of the page's background: a pixel at the bottom left, below the content."""
    pixels = read_png(path)
    r, g, b = (int(v) for v in pixels[-4, 4, :3])
    return r, g, b


def test_a_new_entry_shows_on_the_open_first_page_without_a_reload(
    page: Any, server: Running
) -> None:
    page.wait_for_selector("body.listening", timeout=WAIT_MS)
    page.evaluate("window.memlaneTestMark = 'same page'")
    assert "nightly backup job" not in page.inner_text("section.feed")
    _write(server, "the agent moved the nightly backup job to 02:00 UTC")
    newest = page.locator("section.feed article.feed-item").first
    newest.get_by_text("nightly backup job").wait_for(timeout=WAIT_MS)
    # The same document: no reload, no navigation.
    assert page.evaluate("window.memlaneTestMark") == "same page"
    # The timeline beside it counts it too.
    assert "4 journal entries" in page.inner_text("aside.side")


def test_the_first_page_follows_the_index_as_it_catches_up(page: Any, server: Running) -> None:
    page.wait_for_selector("body.listening", timeout=WAIT_MS)
    page.evaluate("window.memlaneTestMark = 'same page'")
    line = page.locator("aside.side p.index-state")
    memory = open_memory(server.project, clock=FixedClock(NOW))
    try:
        memory.write("the team agreed to rotate the webhook signing secret every quarter")
    finally:
        memory.close()
    waiting = "1 new section in 1 changed file not searchable yet"
    page.locator("aside.side p.index-state", has_text=waiting).wait_for(timeout=WAIT_MS)
    assert line.get_attribute("data-waiting") == "1"
    # What a running agent's indexer does, into the viewer's own index.
    indexed = subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "-C", str(server.project), "index"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert indexed.returncode == 0, indexed.stderr
    page.locator("aside.side p.index-state", has_text="up to date").wait_for(timeout=WAIT_MS)
    assert line.get_attribute("data-waiting") == "0"
    assert page.evaluate("window.memlaneTestMark") == "same page"


def test_typing_in_the_search_box_shows_results(page: Any, server: Running) -> None:
    page.locator("#q").press_sequentially("Redis cache TTL")
    page.locator("#results article.hit").first.wait_for(timeout=WAIT_MS)
    assert "moved the hot cache to Redis" in page.inner_text("#results")
    assert page.url == server.url  # still the first page: results came in under the box
    # On the search page the address follows what is typed.
    page.goto(server.base + "/search")
    page.locator("#q").press_sequentially("flaky webhook")
    page.wait_for_url("**/search?q=flaky+webhook*", timeout=WAIT_MS)
    page.locator("#results article.hit").first.wait_for(timeout=WAIT_MS)
    assert "idempotency key" in page.inner_text("#results")
    # The plain form still works (what a browser without the script does).
    page.goto(server.base + "/search?q=release+checklist")
    assert "docs/release.md" in page.inner_text("#results")


def test_slash_focuses_the_search_box_and_escape_leaves_it(page: Any, server: Running) -> None:
    page.click("h1")
    assert page.evaluate("document.activeElement.id") != "q"
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    assert page.input_value("#q") == ""  # the slash was not typed into it
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") != "q"
    # On a page without a search box, "/" opens the search page.
    page.goto(server.base + "/health")
    page.keyboard.press("/")
    page.wait_for_url("**/search", timeout=WAIT_MS)
    assert page.evaluate("document.activeElement.id") == "q"


def test_dark_mode_follows_the_system_and_the_toggle_flips_it(
    browser: Any, server: Running, tmp_path: Path
) -> None:
    context = browser.new_context(viewport=VIEWPORT, color_scheme="dark")
    try:
        tab = context.new_page()
        tab.goto(server.url)
        tab.screenshot(path=str(tmp_path / "dark.png"))
        assert _background(tmp_path / "dark.png") == DARK_BG
        tab.click("#theme-toggle")
        tab.screenshot(path=str(tmp_path / "toggled.png"))
        assert _background(tmp_path / "toggled.png") == LIGHT_BG
        # Remembered: the next page is light too, on a dark system.
        tab.goto(server.base + "/topics")
        tab.screenshot(path=str(tmp_path / "remembered.png"))
        assert _background(tmp_path / "remembered.png") == LIGHT_BG
        tab.click("#theme-toggle")
        tab.screenshot(path=str(tmp_path / "back.png"))
        assert _background(tmp_path / "back.png") == DARK_BG
    finally:
        context.close()
    light = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    try:
        tab = light.new_page()
        tab.goto(server.url)
        tab.screenshot(path=str(tmp_path / "light.png"))
        assert _background(tmp_path / "light.png") == LIGHT_BG
    finally:
        light.close()


def test_a_phone_screen_needs_no_horizontal_scroll(
    browser: Any, server: Running, tmp_path: Path
) -> None:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        tab = context.new_page()
        paths = (
            "/",
            "/search?q=redis+cache+webhook",
            "/topics",
            "/sessions",
            f"/day/{server.store.today}",
            "/agent",
            "/health",
        )
        for path in paths:
            tab.goto(server.base + path)
            widths = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert widths[0] <= widths[1], (path, widths)
            if path == "/":
                tab.screenshot(path=str(tmp_path / "phone.png"))
                assert distinct_colours(tmp_path / "phone.png") >= MIN_COLOURS
            # Every navigation link is on screen (the bar wraps).
            for box in tab.locator("nav a").evaluate_all(
                "links => links.map(a => a.getBoundingClientRect().right)"
            ):
                assert box <= widths[1], (path, box)
    finally:
        context.close()


def test_a_search_of_contradicting_entries_marks_the_outdated_ones(
    page: Any, server: Running
) -> None:
    old = _hash_of(server, "flaky webhook handler test")
    _write(
        server,
        "the webhook handler test now uses a fake clock instead of the idempotency key",
        supersedes=(old,),
    )
    page.goto(server.base + "/search?q=webhook+handler+test+idempotency+key")
    outdated = page.locator(f'article.hit[data-hash="{old}"]')
    assert outdated.get_attribute("data-superseded-by")
    header = outdated.locator("header")
    when = header.locator("time.when").inner_text()
    assert server.store.yesterday in when and "1 day ago" in when
    band = header.locator(".band")
    assert band.inner_text() in ("strong", "possible", "weak")
    assert "score 0." in (band.get_attribute("title") or "")
    current = page.locator("article.hit").first
    assert "fake clock" in current.inner_text()
    assert current.get_attribute("data-superseded-by") is None
    outdated.locator(".outdated a.newer").click()
    page.wait_for_url("**/expand?hash=*")
    assert "fake clock" in page.inner_text("main")


def test_the_min_score_control_filters_and_the_hint_lowers_it(page: Any, server: Running) -> None:
    page.goto(server.base + "/search?q=release+checklist&kind=journal")
    assert "docs/release.md" in page.inner_text("#results")
    page.fill("input[name=min_score]", "1")
    page.press("input[name=min_score]", "Enter")
    # The form may answer in place (search as you type: the URL changes before the
    # results do), so each check waits for what it looks for.
    page.wait_for_url("**min_score=1*")
    page.locator("p.nothing").wait_for(timeout=WAIT_MS)
    assert page.locator("p.nothing").count() == 1
    page.click("p.hint a.anyway")
    page.wait_for_url("**min_score=0*")
    page.locator("#results", has_text="docs/release.md").wait_for(timeout=WAIT_MS)
    assert page.input_value("input[name=min_score]") == "0"


def test_an_entry_corrected_in_the_viewer_shows_corrected_on_the_open_first_page(
    browser: Any, page: Any, server: Running
) -> None:
    home = browser.new_context(viewport=VIEWPORT).new_page()
    home.goto(server.url)
    home.wait_for_selector("body.listening", timeout=WAIT_MS)
    page.goto(server.base + f"/day/{server.store.today}")
    entry = page.locator("article.entry", has_text="moved the hot cache to Redis")
    entry.locator("a.correct").click()
    assert "moved the hot cache to Redis" in page.input_value("#correction")
    page.fill("#correction", "the hot cache moved from Redis to Valkey")
    page.click("#save-correction")
    page.wait_for_selector("p.ok")
    assert "Corrected in" in page.inner_text("p.ok")
    daily = (server.store.store / f"{server.store.today}.md").read_text(encoding="utf-8")
    assert "Valkey" in daily and "moved the hot cache to Redis" not in daily
    # The other tab, open all along, shows the corrected text without a reload.
    home.locator("section.feed").get_by_text("moved from Redis to Valkey").wait_for(timeout=WAIT_MS)
    assert "moved the hot cache to Redis" not in home.inner_text("section.feed")
    home.context.close()


def test_a_session_reads_as_its_first_ask_with_the_entries_it_produced(
    page: Any, server: Running
) -> None:
    page.click("nav >> text=Sessions")
    title = page.locator("table.sessions a.session-title").first
    assert title.inner_text() == "let us move the hot cache to Redis"
    assert "Z" not in page.locator("table.sessions tr").nth(1).locator("td").nth(2).inner_text()
    title.click()
    assert page.inner_text("h1") == "let us move the hot cache to Redis"
    entries = page.locator("#entries li")
    assert entries.count() >= 2
    entries.first.locator("a").click()
    page.wait_for_url("**/day/*")
    assert page.locator("article.entry").count() >= 1


def test_the_agent_page_shows_the_snapshot_and_a_prompts_auto_context(
    page: Any, server: Running, tmp_path: Path
) -> None:
    page.click("nav >> text=Agent")
    page.wait_for_url("**/agent")
    snapshot = page.locator("#snapshot")
    assert "## Project memory (memlane)" in snapshot.inner_text()
    size = page.locator(".agent-snapshot .size")
    assert int(size.get_attribute("data-tokens") or 0) > 0
    assert "tokens" in size.inner_text()
    page.screenshot(path=str(tmp_path / "agent.png"))
    assert distinct_colours(tmp_path / "agent.png") >= MIN_COLOURS
    page.fill("#prompt", "kubernetes helm rollout")
    page.press("#prompt", "Enter")
    page.wait_for_url("**/agent?prompt=*")
    assert "Nothing would be added" in page.inner_text(".agent-prompt")


def test_the_event_stream_needs_the_token_and_ends_when_the_viewer_stops(
    server: Running,
) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.origin + "/events", timeout=30)
    assert refused.value.code == 403
    stream = urllib.request.urlopen(server.url + "events", timeout=30)
    try:
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert "default-src 'self'" in stream.headers["content-security-policy"]
        assert stream.readline() == b"retry: 1000\n"
        assert stream.readline() == b"event: ready\n"
        # Ctrl-C with a page still listening: the stream ends and the viewer stops.
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=30) == 0
        assert stream.read().endswith(b"\n")
    finally:
        stream.close()
    output = server.output_after_exit()
    assert "memlane ui: stopped" in output and "Traceback" not in output
    assert "timeout graceful shutdown" not in output
