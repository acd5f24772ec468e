"""Sessions a person can read, over a real store: each titled by its first
ask, with its agent and local times (not ``…000Z``), and the journal
entries it produced linked from it."""

from __future__ import annotations

import re

from _web import SESSION_ID, WebStore
from starlette.testclient import TestClient

from memlane.core.types import Anchor
from memlane.hosts.web.viewer import Viewer


def test_the_sessions_list_titles_each_session_and_counts_its_entries(
    client: TestClient, viewer: Viewer
) -> None:
    root = f"/{viewer.keys.token}"
    listing = client.get("/sessions").text
    row = listing.split("<table", 1)[1].split("</tr>", 2)[1]  # the first session's row
    assert re.search(r'class="session-title">let us move the hot cache to Redis</a>', row)
    assert f'class="session-id">{SESSION_ID}</a>' in row
    assert '<span class="agent agent-pi">pi</span>' in row
    # Local times to the minute, not the transcript's UTC stamps.
    assert "000Z" not in row and re.search(r"<td>\d{4}-\d{2}-\d{2} \d{2}:\d{2}</td>", row)
    # The two entries anchored to it, linked to the session's list of them.
    assert re.search(rf'<td><a href="{root}/session\?transcript=[^"]+#entries">2</a></td>', row)


def test_a_session_page_lists_the_entries_it_produced(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    root = f"/{viewer.keys.token}"
    page = client.get("/session", params={"transcript": str(web_store.transcript)}).text
    assert "<h1>let us move the hot cache to Redis</h1>" in page
    assert "<title>let us move the hot cache to Redis · memlane</title>" in page
    entries = page.split('id="entries"', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>: ([^<]+)</li>', entries)
    assert "2 entries, newest first:" in entries
    assert [(href, when[:10]) for href, when, _ in items] == [
        (f"{root}/day/{web_store.today}", web_store.today),
        (f"{root}/day/{web_store.yesterday}", web_store.yesterday),
    ]
    assert "hot cache to Redis" in items[0][2] and "flaky webhook handler" in items[1][2]
    messages = page.split("<h2>Messages</h2>", 1)[1]
    assert "000Z</time>" not in messages and "idempotency key" in messages


def test_a_session_without_entries_says_so(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    from _transcript_builders import PiSession

    quiet = PiSession("019a2b3c-quiet")
    quiet.user("just looking around the repository")
    path = web_store.transcript.with_name("2026-08-13T16-00-00_quiet.jsonl")
    path.write_text("\n".join(quiet.lines) + "\n", encoding="utf-8")
    viewer.catch_up()
    page = client.get("/session", params={"transcript": str(path)}).text
    assert "No journal entry names this session." in page
    # A new entry anchored to it shows on its page at once.
    web_store.memory.write(
        "the agent mapped the repository layout",
        anchor=Anchor("019a2b3c-quiet", "", str(path)),
    )
    page = client.get("/session", params={"transcript": str(path)}).text
    assert "mapped the repository layout" in page.split('id="entries"', 1)[1]
