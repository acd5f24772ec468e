"""memory_write over MCP redacts the same secret kinds as every other channel
(issue 14 item 4), and its reply carries none of them: through the engine and
in the server's own process."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mcp import connect, mode, ok, run, server_env, text_of

from memlane.store.section import read_markdown
from secret_fakes import CHANNEL_SAMPLE

__all__ = ["mode"]  # the fixture: through the engine, and in the server's process

pytestmark = pytest.mark.subprocess


def test_memory_write_over_mcp_stores_and_replies_no_secret(
    project: Path, mode: str, tmp_path: Path
) -> None:
    text = "deploy checklist:\n" + "\n".join(case.text for case in CHANNEL_SAMPLE)

    async def body() -> None:
        async with connect(project, server_env(mode), tmp_path / "stderr.log") as (session, _):
            wrote = await ok(session, "memory_write", text=text)
            found = await ok(session, "memory_search", query="deploy checklist", k=3)
            replies = [text_of(wrote), str(wrote.structured_content), text_of(found)]
            stored = read_markdown(Path(str((wrote.structured_content or {})["path"])))
            for case in CHANNEL_SAMPLE:
                assert f"[REDACTED:{case.kind}]" in stored, case.name
                assert case.secret not in stored, case.name
                for reply in replies:
                    assert case.secret not in reply, case.name

    run(body)
