"""What the agent sees, over a real store: the snapshot a session starting
now gets, a sample auto-context for a typed prompt, and their sizes counted
by the bundled tokenizer."""

from __future__ import annotations

import html
import re
from datetime import timedelta

from _web import WebStore
from starlette.testclient import TestClient
from tokenizers import Tokenizer

from helpers import FixedClock, open_memory, start_session
from memlane.embed.onnx.files import BUNDLED_TOKENIZER


def _pre(page: str, pre_id: str) -> str:
    found = re.search(rf'<pre class="seen" id="{pre_id}">(.*?)</pre>', page, re.S)
    assert found is not None, page
    return html.unescape(found.group(1))


def _sizes(page: str) -> list[tuple[int, int]]:
    return [
        (int(chars), int(tokens))
        for chars, tokens in re.findall(
            r'<span class="size" data-chars="(\d+)" data-tokens="(\d+)">', page
        )
    ]


def _tokens(text: str) -> int:
    tokenizer = Tokenizer.from_file(str(BUNDLED_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def test_the_snapshot_shown_is_the_one_a_session_gets_with_its_size(
    client: TestClient, web_store: WebStore
) -> None:
    page = client.get("/agent").text
    shown = _pre(page, "snapshot")
    session = start_session(web_store.memory)
    try:
        got = session.snapshot.text
    finally:
        session.shutdown()
    assert shown == got
    assert "moved the hot cache to Redis" in shown and "## Project memory (memlane)" in shown
    [(chars, tokens)] = _sizes(page)
    assert chars == len(shown)
    counted = _tokens(shown)
    assert abs(tokens - counted) <= 0.05 * counted  # the target; it is the same count
    assert f"{chars:,} characters, {tokens:,} tokens" in page
    assert "Auto-context is off" in page


def test_a_prompt_shows_the_auto_context_it_would_get(
    client: TestClient, web_store: WebStore
) -> None:
    # Yesterday's entry is in the snapshot (no need to push it); older notes are not.
    memory = web_store.memory
    old = open_memory(memory.scope.repository_dir, clock=FixedClock(memory.clock.now()))
    try:
        old.write(
            "the billing cron job runs at 03:00 UTC and retries twice",
            now=memory.clock.now() - timedelta(days=9),
        )
        old.sync()
    finally:
        old.close()
    page = client.get("/agent", params={"prompt": "when does the billing cron job run?"}).text
    sample = _pre(page, "auto-context")
    assert sample.startswith("Relevant project memory (auto-context")
    assert "billing cron job runs at 03:00 UTC" in sample
    sizes = _sizes(page)
    assert len(sizes) == 2 and sizes[1] == (len(sample), _tokens(sample))
    assert 'value="when does the billing cron job run?"' in page
    nothing = client.get("/agent", params={"prompt": "kubernetes helm rollout"}).text
    assert "Nothing would be added" in nothing and 'id="auto-context"' not in nothing


def test_the_cost_per_day_is_what_the_sessions_handed_the_agent(
    client: TestClient, web_store: WebStore
) -> None:
    empty = client.get("/agent").text
    assert "No prompt recorded yet" in empty
    session = start_session(web_store.memory)
    try:
        handed = [session.before_agent_start(p) for p in ("what about Redis?", "and TTLs?")]
    finally:
        session.shutdown()
    page = client.get("/agent").text
    today = web_store.today
    row = re.search(
        rf'<tr data-day="{today}"><td>{today}</td><td>2</td><td>([\d,]+)</td><td>([\d,]+)</td>'
        r"<td>([\d,]+)</td></tr>",
        page,
    )
    assert row is not None, page
    snapshot_chars = int(row.group(1).replace(",", ""))
    assert snapshot_chars == sum(len(h.system_append) for h in handed)
    assert int(row.group(3).replace(",", "")) > 0
    assert f'<g class="cost-bar" data-day="{today}">' in page
