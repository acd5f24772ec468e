"""The viewer's routes over a real store: access, CSRF, and every page's content."""

from __future__ import annotations

import re

import pytest
from _web import BASE_URL, SESSION_ID, WebStore
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from memlane.hosts.web.app import build_app
from memlane.hosts.web.security import Guard
from memlane.hosts.web.viewer import Viewer


def _csrf_form(html: str) -> dict[str, str]:
    """The hidden fields of the confirmation form, as a browser would post them."""
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


# -- access ---------------------------------------------------------------------------


def test_every_request_without_the_token_is_refused(viewer: Viewer) -> None:
    with TestClient(build_app(viewer), base_url=BASE_URL) as anonymous:
        paths = (
            "/",
            "/search?q=redis",
            "/health",
            "/static/app.css",
            "/forget",
            "/events",
            "/nope",
        )
        for path in paths:
            answer = anonymous.get(path)
            assert answer.status_code == 403, path
            assert "token" in answer.text
        assert anonymous.get("/", params={"token": "wrong" + viewer.keys.token}).status_code == 403
        assert anonymous.post("/forget", data={"date": "2026-11-30"}).status_code == 403


def test_the_token_prefix_opens_every_page_and_no_cookie_carries_it(viewer: Viewer) -> None:
    root = f"/{viewer.keys.token}"
    with TestClient(build_app(viewer), base_url=BASE_URL) as browser:
        first = browser.get(f"{root}/")
        assert first.status_code == 200
        assert f'href="{root}/health"' in first.text  # links stay under the prefix
        assert "default-src 'self'" in first.headers["content-security-policy"]
        for path in ("/", "/health", "/static/app.css"):
            answer = browser.get(root + path)
            assert answer.status_code == 200, path
            assert "set-cookie" not in answer.headers, path
        # Nothing a browser keeps goes along to another path or another port's server.
        assert not browser.cookies
        assert browser.get("/health").status_code == 403


def test_two_viewers_work_side_by_side(web_store: WebStore) -> None:
    first, second = Viewer(web_store.memory), Viewer(web_store.memory)
    with (
        TestClient(build_app(first), base_url=BASE_URL) as one,
        TestClient(build_app(second), base_url=BASE_URL) as other,
    ):
        for _ in range(2):  # alternately, as two tabs would
            assert one.get(f"/{first.keys.token}/health").status_code == 200
            assert other.get(f"/{second.keys.token}/health").status_code == 200
        assert one.get(f"/{second.keys.token}/health").status_code == 403
        assert other.get(f"/{first.keys.token}/").status_code == 403


def test_another_apps_odd_cookie_does_not_lock_the_user_out(viewer: Viewer) -> None:
    with TestClient(build_app(viewer), base_url=BASE_URL) as browser:
        odd = {"cookie": 'prefs={"theme": "dark"}; other=1'}
        assert browser.get(f"/{viewer.keys.token}/health", headers=odd).status_code == 200


def test_a_token_in_the_query_is_sent_to_the_same_page_without_it(viewer: Viewer) -> None:
    token = viewer.keys.token
    with TestClient(build_app(viewer), base_url=BASE_URL, follow_redirects=False) as browser:
        old_style = browser.get("/search", params={"token": token, "q": "redis"})
        assert old_style.status_code == 303
        assert old_style.headers["location"] == f"/{token}/search?q=redis"
        inside = browser.get(f"/{token}/health", params={"token": token})
        assert inside.status_code == 303 and inside.headers["location"] == f"/{token}/health"
        bare = browser.get(f"/{token}")
        assert bare.status_code == 303 and bare.headers["location"] == f"/{token}/"


def test_a_websocket_is_refused(client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect), client.websocket_connect("/"):
        pass


def test_a_server_error_carries_the_security_headers(viewer: Viewer) -> None:
    # The viewer's app is the Guard around all of Starlette, its error page included.
    assert isinstance(build_app(viewer), Guard)

    async def broken(request: Request) -> Response:
        raise RuntimeError("a bug in a page")

    guarded = Guard(Starlette(routes=[Route("/boom", broken)]), viewer.keys)
    with TestClient(
        guarded, base_url=f"{BASE_URL}/{viewer.keys.token}", raise_server_exceptions=False
    ) as browser:
        answer = browser.get("/boom")
    assert answer.status_code == 500
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["x-frame-options"] == "DENY"


def test_a_huge_page_number_is_the_first_page(client: TestClient) -> None:
    for page in ("9" * 5000, "-3", "x"):
        answer = client.get("/sessions", params={"page": page})
        assert answer.status_code == 200, page[:10]
        assert "page 1" in answer.text


def test_a_foreign_host_name_is_refused_even_with_the_token(viewer: Viewer) -> None:
    with TestClient(build_app(viewer), base_url="http://attacker.example") as rebound:
        assert rebound.get(f"/{viewer.keys.token}/").status_code == 403
        assert rebound.get("/", params={"token": viewer.keys.token}).status_code == 403


# -- state changes: POST only, same origin, CSRF token -----------------------------------


def test_forgetting_is_post_only(client: TestClient, web_store: WebStore) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        answer = client.request(method, "/forget", params={"date": web_store.today})
        assert answer.status_code == 405, method
    # A GET with every argument only shows the confirmation: nothing is removed.
    before = _daily(web_store, web_store.today)
    shown = client.get(
        "/forget", params={"date": web_store.today, "time": _first_time(client, web_store)}
    )
    assert shown.status_code == 200 and "Forget this entry" in shown.text
    assert _daily(web_store, web_store.today) == before


def test_a_post_without_the_csrf_token_or_from_another_origin_is_refused(
    client: TestClient, web_store: WebStore
) -> None:
    time = _first_time(client, web_store)
    form = _csrf_form(client.get("/forget", params={"date": web_store.today, "time": time}).text)
    before = _daily(web_store, web_store.today)
    own = {"origin": BASE_URL}
    no_csrf = {k: v for k, v in form.items() if k != "csrf"}
    assert client.post("/forget", data=no_csrf, headers=own).status_code == 403
    wrong = {**form, "csrf": "x" + form["csrf"]}
    assert client.post("/forget", data=wrong, headers=own).status_code == 403
    foreign = {"origin": "http://attacker.example"}
    assert client.post("/forget", data=form, headers=foreign).status_code == 403
    assert client.post("/forget", data=form).status_code == 403  # no Origin nor Referer
    assert _daily(web_store, web_store.today) == before


def test_forget_from_a_day_entry_removes_exactly_what_the_confirmation_showed(
    client: TestClient, web_store: WebStore
) -> None:
    day = client.get(f"/day/{web_store.today}").text
    assert "/forget?date=" in day
    time = _first_time(client, web_store)
    confirm = client.get("/forget", params={"date": web_store.today, "time": time}).text
    shown = re.search(r'<pre class="removed">(.*?)</pre>', confirm, re.S)
    assert shown is not None and "Redis" in shown.group(1)
    before = _daily(web_store, web_store.today)
    done = client.post("/forget", data=_csrf_form(confirm), headers={"origin": BASE_URL})
    assert done.status_code == 200, done.text
    assert "Removed from" in done.text
    after = _daily(web_store, web_store.today)
    assert "moved the hot cache to Redis" in before
    assert "moved the hot cache to Redis" not in after
    assert "release checklist" in after  # the other entry of the day stays
    search = client.get("/search", params={"q": "hot cache Redis TTLs", "kind": "journal"}).text
    assert "moved the hot cache" not in search


def test_forget_from_a_search_hit_removes_that_entry(
    client: TestClient, web_store: WebStore
) -> None:
    hit = _hash_of(client, "release checklist")
    confirm = client.get("/forget", params={"chunk_hash": hit}).text
    assert "release checklist" in confirm and "hot cache" not in confirm.split("<pre")[1]
    done = client.post(
        "/forget", data=_csrf_form(confirm), headers={"referer": f"{client.base_url}/"}
    )
    assert done.status_code == 200, done.text
    after = _daily(web_store, web_store.today)
    assert "release checklist" not in after and "moved the hot cache to Redis" in after
    # The hash is gone with the entry: asking again is a clear "not found".
    again = client.get("/forget", params={"chunk_hash": hit})
    assert again.status_code == 404 and 'class="error"' in again.text


def test_forget_by_date_and_time_refuses_with_409_when_the_entry_changed(
    client: TestClient, web_store: WebStore
) -> None:
    time = _first_time(client, web_store)
    confirm = client.get("/forget", params={"date": web_store.today, "time": time}).text
    path = web_store.store / f"{web_store.today}.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("5 minute TTLs", "10 minute TTLs"),
        encoding="utf-8",
    )
    answer = client.post("/forget", data=_csrf_form(confirm), headers={"origin": BASE_URL})
    assert answer.status_code == 409
    assert "changed since the confirmation" in answer.text
    assert "10 minute TTLs" in path.read_text(encoding="utf-8")


def test_forget_by_hash_refuses_when_the_file_changed_after_the_confirmation(
    client: TestClient, web_store: WebStore
) -> None:
    hit = _hash_of(client, "release checklist")
    confirm = client.get("/forget", params={"chunk_hash": hit}).text
    path = web_store.store / f"{web_store.today}.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("docs/release.md", "docs/RELEASE.md"),
        encoding="utf-8",
    )
    answer = client.post("/forget", data=_csrf_form(confirm), headers={"origin": BASE_URL})
    assert answer.status_code in (404, 409)
    assert "docs/RELEASE.md" in path.read_text(encoding="utf-8")


# -- the pages ----------------------------------------------------------------------


def test_the_timeline_counts_each_day(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    root = f"/{viewer.keys.token}"
    page = client.get("/").text
    assert f'href="{root}/day/{web_store.today}"' in page
    assert f'href="{root}/day/{web_store.yesterday}"' in page
    days = {d["day"]: d for d in client.get("/timeline.json").json()}
    assert days[web_store.today]["journal"] == 2
    assert days[web_store.yesterday]["journal"] == 1
    assert days[web_store.today]["topics"] == 1
    # The session's five messages, indexed when the timeline page was opened.
    assert days["2026-08-13"]["messages"] == 5
    page = client.get("/").text
    assert f'href="{root}/day/2026-08-13"' in page
    # The days between the session and the notes are a labelled gap, not adjacent bars.
    assert '<g class="gap"><title>107 days without memory</title>' in page
    # A new entry shows at once: a daily file that changed is counted again.
    web_store.memory.write("the agent renamed the billing cron job")
    days = {d["day"]: d for d in client.get("/timeline.json").json()}
    assert days[web_store.today]["journal"] == 3


def test_a_day_shows_each_entry_with_time_session_and_transcript(
    client: TestClient, web_store: WebStore
) -> None:
    page = client.get(f"/day/{web_store.today}").text
    assert "moved the hot cache to Redis" in page and "release checklist" in page
    assert f"session {SESSION_ID}" in page
    assert f"turn={web_store.redis_turn}" in page
    transcript = client.get(
        "/transcript", params={"path": str(web_store.transcript), "turn": web_store.redis_turn}
    )
    assert transcript.status_code == 200
    assert "5 minute TTLs for the Redis cache keys" in transcript.text
    assert client.get("/day/2026-13-45").status_code == 400
    assert "No daily file" in client.get("/day/2020-01-01").text
    # A day of session messages only lists its sessions.
    messages_only = client.get("/day/2026-08-13").text
    assert "No daily file" in messages_only and "Sessions that day" in messages_only
    assert SESSION_ID in messages_only


def test_a_day_shows_whole_compact_blocks_and_hand_written_sections(
    client: TestClient, web_store: WebStore
) -> None:
    path = web_store.store / f"{web_store.today}.md"
    path.write_text(
        path.read_text(encoding="utf-8")
        + "\n## Memory Compact 18:30\n\n### Decisions\n- keep Redis\n\n"
        "### Open questions\n- TTLs per key?\n\n## Notes\n\nCall the billing team.\n",
        encoding="utf-8",
    )
    page = client.get(f"/day/{web_store.today}").text
    compact = page.split('data-time="18:30#1"', 1)[1].split("</article>", 1)[0]
    assert "keep Redis" in compact and "TTLs per key?" in compact  # the whole block
    assert "Call the billing team." in page  # a hand-written section shows too
    notes = page.split("Call the billing team.", 1)[0].rsplit("<article", 1)[1]
    assert "forget" not in notes  # no removal takes it
    confirm = client.get("/forget", params={"date": web_store.today, "time": "18:30#1"}).text
    assert "TTLs per key?" in confirm and "billing team" not in confirm
    days = {d["day"]: d for d in client.get("/timeline.json").json()}
    assert days[web_store.today]["journal"] == 3  # two entries and the compact block


def test_a_day_lists_the_sessions_with_messages_that_day_only(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    from datetime import UTC, datetime

    from _transcript_builders import PiSession

    spread = PiSession("019a2b3c-spread")
    spread.clock = datetime(2026, 8, 20, 9, 0, tzinfo=UTC)
    spread.user("asked on the twentieth")
    spread.clock = datetime(2026, 8, 22, 9, 0, tzinfo=UTC)
    spread.user("asked again on the twenty-second")
    path = web_store.transcript.with_name("2026-08-20T09-00-00_spread.jsonl")
    path.write_text("\n".join(spread.lines) + "\n", encoding="utf-8")
    viewer.catch_up()
    first = client.get("/day/2026-08-20").text
    assert "019a2b3c-spread" in first and "1 messages that day" in first
    assert SESSION_ID not in first.split("Sessions that day", 1)[1]
    # The session spans the 21st but has no message on it.
    assert "Sessions that day" not in client.get("/day/2026-08-21").text
    assert "019a2b3c-spread" in client.get("/day/2026-08-22").text


def test_search_shows_hits_then_the_section_then_the_turns(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    page = client.get("/search", params={"q": "Redis cache TTLs"}).text
    assert 'data-score="' in page and 'data-kind="journal"' in page
    assert f'href="/{viewer.keys.token}/day/{web_store.today}"' in page
    chunk = _hash_of(client, "Redis cache TTLs")
    section = client.get("/fragment/expand", params={"hash": chunk}).text
    assert "moved the hot cache to Redis" in section
    assert 'class="transcript"' in section and str(web_store.transcript) in section
    turns = client.get(
        "/fragment/transcript",
        params={"path": str(web_store.transcript), "turn": web_store.redis_turn},
    ).text
    assert 'class="turn role-user target"' in turns


def test_search_takes_iso_times_and_says_what_a_bad_one_should_be(
    client: TestClient, web_store: WebStore
) -> None:
    with_zone = client.get(
        "/search", params={"q": "webhook idempotency", "before": "2999-12-03T14:12:30Z"}
    )
    assert with_zone.status_code == 200 and 'class="summary"' in with_zone.text
    bad = client.get("/search", params={"q": "webhook idempotency", "after": "last week"})
    assert bad.status_code == 200
    assert "last week" in bad.text and "is not a date or time" in bad.text
    assert "2026-12-03T14:12:30Z" in bad.text  # the accepted forms
    assert 'name="after" value="last week"' in bad.text  # the form keeps what was typed


def test_search_filters_and_says_when_nothing_is_relevant(
    client: TestClient, web_store: WebStore
) -> None:
    later = client.get(
        "/search", params={"q": "webhook idempotency", "after": web_store.today}
    ).text
    assert "idempotency key" not in later.split('<p class="summary">')[-1]
    nothing = client.get("/search", params={"q": "kubernetes helm chart rollout"}).text
    assert 'class="nothing"' in nothing
    topics = client.get("/search", params={"q": "deploys Tuesdays billing", "kind": "topic"}).text
    assert 'data-kind="topic"' in topics and 'data-kind="journal"' not in topics
    sessions = client.get("/search", params={"q": "flaky webhook test", "kind": "session"}).text
    assert 'data-kind="session"' in sessions and SESSION_ID in sessions
    other = client.get("/search", params={"q": "Redis cache", "session": "someone-else"}).text
    assert 'data-kind="journal"' not in other


def test_each_hit_shows_its_band_date_and_age(client: TestClient, web_store: WebStore) -> None:
    page = client.get("/search", params={"q": "flaky webhook idempotency key", "kind": "journal"})
    hit = page.text.split('<article class="hit"', 1)[1].split("</header>", 1)[0]
    assert re.search(r'<span class="band band-(strong|possible|weak)"[^>]*>\w+</span>', hit)
    # Written yesterday at 10:00 on the suite's clock: the day, not only the time.
    assert (
        f'<time class="when" datetime="{web_store.yesterday}T10:00">'
        f"{web_store.yesterday} 10:00 · 1 day ago</time>"
    ) in hit


def test_an_outdated_hit_links_to_the_memory_that_replaced_it(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    old = _hash_of(client, "flaky webhook idempotency key")
    web_store.memory.write(
        "the webhook handler test now uses a <b>fake clock</b> instead of the idempotency key",
        supersedes=(old,),
    )
    page = client.get("/search", params={"q": "webhook handler test idempotency key"}).text
    articles = re.findall(r'<article class="hit" data-hash="([0-9a-f]+)"([^>]*)>', page)
    newer = articles[0][0]
    assert articles[0][1] == ' data-kind="journal"'  # the current fact first, unmarked
    assert (old, f' data-kind="journal" data-superseded-by="{newer}"') in articles
    mark = page.split(f'data-superseded-by="{newer}"', 1)[1].split('<div class="content">')[0]
    assert (
        '<p class="outdated"><strong>outdated</strong> — superseded by '
        f'<a href="/{viewer.keys.token}/expand?hash={newer}" class="newer">'
        f"the newer memory {newer}</a></p>"
    ) in mark
    assert "&lt;b&gt;fake clock&lt;/b&gt;" in page and "<b>fake clock" not in page
    # The link opens the newer memory's section as a page.
    section = client.get("/expand", params={"hash": newer})
    assert section.status_code == 200 and "<title>Memory · memlane</title>" in section.text
    assert "uses a &lt;b&gt;fake clock&lt;/b&gt;" in section.text
    assert client.get("/expand", params={"hash": "0" * 16}).status_code == 404


def test_nothing_relevant_links_to_the_search_with_min_score_0(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    floor = {"q": "release checklist", "kind": "journal", "min_score": "1"}
    page = client.get("/search", params=floor).text
    assert 'class="nothing"' in page and "scored below the minimum score 1" in page
    link = re.search(
        r'<p class="hint"><a href="([^"]+)" class="anyway">Search with min_score 0', page
    )
    assert link is not None
    href = link.group(1).replace("&amp;", "&")
    assert href.startswith(f"/{viewer.keys.token}/search?") and "min_score=0" in href
    anyway = client.get(href.removeprefix(f"/{viewer.keys.token}")).text
    assert "docs/release.md" in anyway and 'class="nothing"' not in anyway
    assert 'name="min_score" min="0" max="1" step="0.01" value="0"' in anyway
    # Nothing stored that matches at all: no such link, there is nothing below a floor.
    empty = client.get("/search", params={"q": "kubernetes helm chart rollout"}).text
    assert 'class="nothing"' in empty and 'class="anyway"' not in empty
    # A floor that is not a score asks for none.
    odd = client.get("/search", params={"q": "release checklist", "min_score": "2'><b>"}).text
    assert "docs/release.md" in odd and "<b>" not in odd.split("<main>", 1)[1]


def test_newest_first_orders_the_hits_by_date(client: TestClient, web_store: WebStore) -> None:
    query = {"q": "the agent user Redis webhook release", "kind": "journal"}
    newest = client.get("/search", params={**query, "order": "newest"}).text
    dates = re.findall(r'<time class="when" datetime="([^"]+)"', newest)
    assert len(dates) >= 2 and dates == sorted(dates, reverse=True)
    assert '<option value="newest" selected>newest first</option>' in newest
    relevance = client.get("/search", params=query).text
    assert '<option value="relevance">relevance</option>' in relevance


def test_the_topics_pages_show_memory_md_and_each_entry(client: TestClient, viewer: Viewer) -> None:
    index = client.get("/topics").text
    assert "MEMORY.md" in index and f'href="/{viewer.keys.token}/topics/deploys"' in index
    topic = client.get("/topics/deploys").text
    assert "Deploy day" in topic and "billing cron" in topic
    assert client.get("/topics/no-such-topic").status_code == 404


def test_the_sessions_pages_list_sessions_and_their_messages(
    client: TestClient, web_store: WebStore
) -> None:
    listing = client.get("/sessions").text
    assert SESSION_ID in listing and "let us move the hot cache to Redis" in listing
    messages = client.get("/session", params={"transcript": str(web_store.transcript)}).text
    assert "idempotency key" in messages and "5 messages" in messages


def test_a_long_session_is_shown_a_page_at_a_time(
    client: TestClient, web_store: WebStore, viewer: Viewer
) -> None:
    from _transcript_builders import PiSession

    long = PiSession("019a2b3c-long")
    for n in range(60):
        long.user(f"question number {n:02d}")
    path = web_store.transcript.with_name("2026-08-13T15-00-00_long.jsonl")
    path.write_text("\n".join(long.lines) + "\n", encoding="utf-8")
    viewer.catch_up()
    first = client.get("/session", params={"transcript": str(path)}).text
    assert "60 messages" in first and "question number 49" in first
    assert "question number 50" not in first and 'rel="next"' in first
    second = client.get("/session", params={"transcript": str(path), "page": "2"}).text
    assert "question number 50" in second and "question number 59" in second
    assert "question number 49" not in second and 'rel="next"' not in second


def test_the_health_page_is_the_status_report(client: TestClient, web_store: WebStore) -> None:
    page = client.get("/health").text
    assert "Nothing missing." in page or 'class="missing"' in page
    assert str(web_store.store) in page
    assert "auto-context" in page and "capture" in page
    assert re.search(r"\d+ chunks in \d+ files", page)


def test_markup_in_memory_is_shown_as_text(client: TestClient, web_store: WebStore) -> None:
    web_store.memory.write("the agent noted <script>alert(1)</script> in a <b>log</b>")
    page = client.get(f"/day/{web_store.today}").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    search = client.get("/search", params={"q": '<img src=x onerror="x">'}).text
    assert "<img src=x" not in search


# -- helpers ------------------------------------------------------------------------


def _daily(store: WebStore, day: str) -> str:
    return (store.store / f"{day}.md").read_text(encoding="utf-8")


def _first_time(client: TestClient, store: WebStore) -> str:
    page = client.get(f"/day/{store.today}").text
    found = re.search(r'data-time="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def _hash_of(client: TestClient, query: str) -> str:
    page = client.get("/search", params={"q": query, "kind": "journal"}).text
    found = re.search(r'<article class="hit" data-hash="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)
