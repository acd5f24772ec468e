"""The first page over a real store: the newest memories under a search box,
the timeline beside them, and its live part as a fragment."""

from __future__ import annotations

import re

from _web import SESSION_ID, WebStore
from starlette.testclient import TestClient

from _transcript_builders import PiSession
from memlane.hosts.web.viewer import Viewer


def test_the_first_page_shows_the_newest_memories_under_a_search_box(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    root = f"/{viewer.keys.token}"
    page = client.get("/").text
    main = page.split("<main>", 1)[1]
    # The search box comes first, and searches.
    assert main.index('<input type="search" name="q" id="q"') < main.index("Newest memories")
    assert f'action="{root}/search"' in main
    feed = main.split('<section class="feed"', 1)[1].split("</section>", 1)[0]
    kinds = re.findall(r'<article class="entry feed-item kind-(\w+)" data-kind="\w+">', feed)
    assert set(kinds) == {"journal", "topic", "session"}
    # Newest first: today's two entries (the later one first), then yesterday's.
    texts = [
        feed.index("release checklist"),
        feed.index("moved the hot cache to Redis"),
        feed.index("flaky webhook handler"),
    ]
    assert texts == sorted(texts)
    # Each with its date and age, not only its time.
    assert (
        f'<time class="when" datetime="{web_store.yesterday}T10:00">'
        f"{web_store.yesterday} 10:00 · 1 day ago</time>"
    ) in feed
    assert f"{web_store.today} 10:00 · today" in feed
    assert "Deploy day" in feed and f'href="{root}/topics/deploys"' in feed
    # A session with its agent and its first ask, at local time (not …000Z).
    session = feed.split('data-kind="session"', 1)[1].split("</article>", 1)[0]
    assert SESSION_ID in session and "let us move the hot cache to Redis" in session
    assert '<span class="agent agent-pi">pi</span>' in session and "000Z" not in session
    # The timeline is beside them: the chart and a link to each day.
    side = main.split('<aside class="side"', 1)[1]
    assert 'id="timeline-chart"' in side
    assert f'href="{root}/day/{web_store.today}"' in side


def test_the_live_part_is_a_fragment_and_shows_a_new_entry(
    client: TestClient, web_store: WebStore
) -> None:
    before = client.get("/fragment/home").text
    assert "<html" not in before and "Newest memories" in before
    assert "renamed the billing cron job" not in before
    web_store.memory.write("the agent renamed the billing cron job")
    after = client.get("/fragment/home").text
    feed = after.split("</section>", 1)[0]
    assert feed.index("renamed the billing cron job") < feed.index("release checklist")


def test_a_session_indexed_after_the_page_was_built_shows_on_it(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    first = client.get("/").text
    assert "019a2b3c-later" not in first
    before = {d["day"]: d["messages"] for d in client.get("/timeline.json").json()}
    pi = PiSession("019a2b3c-later")
    pi.user("plan the Postgres connection pool retry")
    pi.assistant("The pool now retries twice with jitter.")
    later = web_store.transcript.parent / "2026-08-14T09-00-00_later.jsonl"
    later.write_text("\n".join(pi.lines) + "\n", encoding="utf-8")
    viewer.catch_up()  # what the viewer's Background does while it runs
    page = client.get("/").text
    feed = page.split('<section class="feed"', 1)[1].split("</section>", 1)[0]
    assert "019a2b3c-later" in feed and "Postgres connection pool retry" in feed
    assert "019a2b3c-later" in client.get("/sessions").text
    after = {d["day"]: d["messages"] for d in client.get("/timeline.json").json()}
    assert sum(after.values()) == sum(before.values()) + 2
