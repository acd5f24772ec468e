"""Correcting an entry in the viewer, over a real store: its text in a form,
then rewritten in place; the old text is nowhere in the store or the index,
the agent's next search returns the corrected text; the POST checks of
forget (CSRF, origin, the fingerprint under the store lock)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from _web import BASE_URL, WebStore
from starlette.testclient import TestClient

from memlane.hosts.web.viewer import Viewer

OLD = "moved the hot cache to Redis with 5 minute TTLs"
NEW = "the hot cache moved from Redis to Valkey with 10 minute TTLs"


def _form(page: str) -> dict[str, str]:
    """The correction form's fields, as a browser would post them."""
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page))
    text = re.search(r'<textarea id="correction" name="text" rows="8">(.*?)</textarea>', page, re.S)
    assert text is not None, page
    return {**fields, "text": html.unescape(text.group(1))}


def _redis_entry_form(client: TestClient, web_store: WebStore) -> str:
    day = client.get(f"/day/{web_store.today}").text
    entry = day.split(OLD, 1)[0].rsplit('<article class="entry" data-time="', 1)[1]
    address = entry.split('"', 1)[0]
    assert f"/correct?date={web_store.today}&amp;time=" in day
    return client.get("/correct", params={"date": web_store.today, "time": address}).text


def _holding(roots: list[Path], needle: str) -> list[str]:
    return [
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and needle.lower().encode() in p.read_bytes().lower()
    ]


def test_a_corrected_entry_is_what_the_next_search_returns(
    client: TestClient, web_store: WebStore, viewer: Viewer, isolated_home: Path
) -> None:
    page = _redis_entry_form(client, web_store)
    form = _form(page)
    assert form["text"] == f"- the user and the agent {OLD}"
    assert "session:" not in form["text"]  # the anchor is not offered for editing: it stays
    daily = web_store.store / f"{web_store.today}.md"
    before = daily.read_text(encoding="utf-8")
    assert client.get("/correct", params={"date": web_store.today}).status_code in (400, 404)
    done = client.post("/correct", data={**form, "text": NEW}, headers={"origin": BASE_URL})
    assert done.status_code == 200, done.text
    assert "Corrected in" in done.text and OLD in done.text  # the old text, echoed once
    after = daily.read_text(encoding="utf-8")
    assert f"- {NEW}" in after and OLD not in after
    # The heading and the anchor stay: the entry keeps its time and its conversation.
    anchor = next(line for line in before.splitlines() if web_store.redis_turn in line)
    assert anchor in after and after.count("### ") == before.count("### ")
    assert _holding([isolated_home, web_store.store], OLD) == []
    found = viewer.tools.call("memory_search", {"query": "hot cache TTLs", "kind": "journal"})
    assert "Valkey" in found.details["hits"][0]["content"]


def test_a_correction_needs_the_pages_csrf_token_and_origin(
    client: TestClient, web_store: WebStore
) -> None:
    form = _form(_redis_entry_form(client, web_store))
    daily = web_store.store / f"{web_store.today}.md"
    before = daily.read_bytes()
    own = {"origin": BASE_URL}
    changed = {**form, "text": NEW}
    assert client.post("/correct", data={**changed, "csrf": "x"}, headers=own).status_code == 403
    foreign = {"origin": "http://attacker.example"}
    assert client.post("/correct", data=changed, headers=foreign).status_code == 403
    assert client.post("/correct", data=changed).status_code == 403
    assert daily.read_bytes() == before


def test_a_correction_of_a_file_that_changed_since_the_form_is_refused(
    client: TestClient, web_store: WebStore
) -> None:
    form = _form(_redis_entry_form(client, web_store))
    daily = web_store.store / f"{web_store.today}.md"
    daily.write_text(
        daily.read_text(encoding="utf-8").replace("5 minute", "6 minute"), encoding="utf-8"
    )
    before = daily.read_bytes()
    done = client.post("/correct", data={**form, "text": NEW}, headers={"origin": BASE_URL})
    assert done.status_code == 409 and "review it again" in done.text
    assert daily.read_bytes() == before


def test_a_journal_hit_offers_to_correct_it(client: TestClient, viewer: Viewer) -> None:
    page = client.get("/search", params={"q": "release checklist", "kind": "journal"}).text
    found = re.search(r'<a href="/[^"]+/correct\?chunk_hash=([0-9a-f]+)" class="correct">', page)
    assert found is not None
    form = client.get("/correct", params={"chunk_hash": found.group(1)}).text
    assert "- the release checklist lives in docs/release.md" in form
