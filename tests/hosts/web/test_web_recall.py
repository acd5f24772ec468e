"""How far a hit can be trusted, as the viewer shows it over a real store: a
band with the score in its tooltip, expand that adds what is around a
one-entry hit, a topic's preamble without its frontmatter, a day's age."""

from __future__ import annotations

import re

from _web import WebStore
from starlette.testclient import TestClient


def _first_hit(client: TestClient, query: str, kind: str = "journal") -> str:
    page = client.get("/search", params={"q": query, "kind": kind}).text
    return page.split('<article class="hit"', 1)[1].split("</article>", 1)[0]


def test_a_hit_shows_its_band_with_the_score_only_in_its_tooltip(client: TestClient) -> None:
    hit = _first_hit(client, "flaky webhook idempotency key")
    header = hit.split("</header>", 1)[0]
    band = re.search(
        r'<span class="band band-(strong|possible|weak)" title="how far to trust this hit '
        r'\(score (0\.\d{3})\)" data-score="(0\.\d{3})">(\w+)</span>',
        header,
    )
    assert band is not None, header
    assert band.group(2) == band.group(3) and band.group(4) == band.group(1)
    # No bare number next to it.
    assert 'class="score"' not in header
    assert re.sub(r"<[^>]+>|title=\"[^\"]*\"", "", header).count(band.group(2)) == 0


def test_expand_on_a_one_entry_hit_shows_the_entries_around_it(
    client: TestClient, web_store: WebStore
) -> None:
    page = client.get("/search", params={"q": "Redis cache TTLs", "kind": "journal"}).text
    chunk = re.search(r'<article class="hit" data-hash="([0-9a-f]+)"', page)
    assert chunk is not None
    section = client.get("/fragment/expand", params={"hash": chunk.group(1)}).text
    assert "This hit is one whole entry; around it in" in section
    assert f">{web_store.today}</a>" in section
    # Today's file: the Redis entry, then the release checklist after it.
    after = section.split('<div class="neighbour after">', 1)[1]
    assert "release checklist" in after
    target = section.split('<div class="neighbour target">', 1)[1].split("</div>", 1)[0]
    assert "moved the hot cache to Redis" in target
    assert '<div class="neighbour before">' not in section  # the first entry that day
    # Its own page (where "outdated" links to) is the section alone.
    alone = client.get("/expand", params={"hash": chunk.group(1)}).text
    assert "moved the hot cache to Redis" in alone and "neighbour" not in alone


def test_a_topic_preamble_is_a_hit_without_the_frontmatter(
    client: TestClient, web_store: WebStore
) -> None:
    path = web_store.store / "topics" / "deploys.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("---\n\n##", "---\nThe deploy calendar and its freeze windows.\n\n##", 1),
        encoding="utf-8",
    )
    web_store.memory.sync()
    hit = _first_hit(client, "deploy calendar freeze windows", kind="topic")
    assert "freeze windows" in hit
    content = hit.split('<div class="content">', 1)[1].split("</div>", 1)[0]
    assert "name: Deploys" not in content and "type: project" not in content
    assert "<hr" not in content


def test_a_day_says_how_long_ago_it_was(client: TestClient, web_store: WebStore) -> None:
    page = client.get(f"/day/{web_store.yesterday}").text
    assert (
        f'<time class="when" datetime="{web_store.yesterday}">{web_store.yesterday} · 1 day ago'
    ) in page


def test_a_min_score_in_the_url_is_kept_in_the_form_and_applied(client: TestClient) -> None:
    query = {"q": "the agent cache webhook release checklist", "kind": "journal"}
    every = client.get("/search", params={**query, "min_score": "0"}).text
    scores = sorted(float(s) for s in re.findall(r'data-score="([0-9.]+)"', every))
    assert len(scores) >= 2 and scores[0] < scores[-1]
    floor = f"{(scores[0] + scores[-1]) / 2:.2f}"
    above = client.get("/search", params={**query, "min_score": floor}).text
    kept = [float(s) for s in re.findall(r'data-score="([0-9.]+)"', above)]
    assert kept and len(kept) < len(scores) and min(kept) >= float(floor)
    assert f'name="min_score" min="0" max="1" step="0.01" value="{float(floor):g}"' in above
