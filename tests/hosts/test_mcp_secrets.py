"""memory_write over MCP redacts the same secret kinds as every other channel
(issue 14 item 4), and its reply carries none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mcp import _ok, _text, connect, run

from helpers import FixedClock
from memlane.store.section import read_markdown
from secret_fakes import CHANNEL_SAMPLE


def test_memory_write_over_mcp_stores_and_replies_no_secret(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    text = "deploy checklist:\n" + "\n".join(case.text for case in CHANNEL_SAMPLE)

    async def body() -> None:
        async with connect(project, clock) as (session, _):
            wrote = await _ok(session, "memory_write", text=text)
            found = await _ok(session, "memory_search", query="deploy checklist", k=3)
            replies = [_text(wrote), str(wrote.structured_content), _text(found)]
            stored = read_markdown(Path(str((wrote.structured_content or {})["path"])))
            for case in CHANNEL_SAMPLE:
                assert f"[REDACTED:{case.kind}]" in stored, case.name
                assert case.secret not in stored, case.name
                for reply in replies:
                    assert case.secret not in reply, case.name

    run(body)
