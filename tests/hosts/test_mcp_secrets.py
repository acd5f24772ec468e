"""memory_write over MCP redacts the same secret kinds as every other channel
(issue 14 item 4), and its reply carries none of them: through the engine and
in the server's own process. Every kind of the table goes in whole-line and
mid-sentence (issue 28); the reply says how many were redacted, and no
search echoes a secret from its query (the kinds issue 28 found stored
verbatim, typed into queries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mcp import connect, mode, ok, run, server_env, text_of

from memlane.store.redaction import redact
from memlane.store.section import read_markdown
from secret_fakes import CHANNEL_SAMPLE, ISSUE_28, SECRETS, every_kind_text, in_sentence

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


def test_every_kind_over_mcp_is_stored_nowhere_and_never_echoed(
    project: Path, mode: str, tmp_path: Path, isolated_home: Path
) -> None:
    text = every_kind_text()
    expected = redact(text).count

    async def body() -> None:
        async with connect(project, server_env(mode), tmp_path / "stderr.log") as (session, _):
            wrote = await ok(session, "memory_write", text=text)
            assert f"{expected} secret(s) were redacted before saving." in text_of(wrote)
            assert (wrote.structured_content or {})["redactions"] == expected
            found = await ok(session, "memory_search", query="staging box deploy", k=20)
            assert "[REDACTED:" in text_of(found)
            replies = [text_of(wrote), str(wrote.structured_content), text_of(found)]
            for case in ISSUE_28:
                for query in (case.line, "zzqxv " + in_sentence(case)):
                    searched = await ok(session, "memory_search", query=query)
                    replies += [text_of(searched), str(searched.structured_content)]
                topic = await ok(session, "memory_topic", action="search", query=case.line)
                replies += [text_of(topic), str(topic.structured_content)]
            for case in SECRETS:
                for reply in replies:
                    assert case.secret not in reply, case.name

    run(body)
    for case in SECRETS:
        needle = case.secret.encode()
        for root in (project, isolated_home):
            for path in root.rglob("*"):
                if path.is_file():
                    assert needle not in path.read_bytes(), f"{case.name} in {path}"
