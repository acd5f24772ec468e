"""memlane in the real Codex CLI (``codex exec``), against the fake Responses API (issue 30).

memlane is installed by ``memlane install codex``'s own code into a home
whose ``~/.codex/config.toml`` already names the user's model provider;
hooks run trusted without any flag (install wrote Codex's trust hashes).
Capture runs without an LLM (a verbatim digest), so the notes hold the
exchange's own words.

0. Codex lists memlane's MCP server with the install's ``env`` (``codex mcp list``).
1. Session 1's exchange is captured, anchored to Codex's rollout of that session.
2. Session 2's first model request carries it (SessionStart's snapshot, with
   the sessions layer's listing of session 1), and the prompt's auto-context.
3. The model walks the MCP ladder: search → expand → transcript (L3 reads
   Codex's rollout), and its memory_write is anchored to the session that made it.
4. Uninstall: config.toml byte for byte as before, the skill gone; Codex runs
   without memlane; no engine or server process is left.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from codex_harness import MEMLANE, CodexInstall, CodexWorld, RunResult

from fake_llm import Reply
from fake_responses import FakeResponses, ResponsesRequest
from helpers import engine_pids, wait_for

pytestmark = pytest.mark.e2e

TOOL = "mcp__memlane__"
FACT_PROMPT = "Remember this: the deploy codename for the payments service is bluefinch-42."
FACT_ANSWER = "Noted: payments deploys under the codename bluefinch-42."
OLD_NOTE = "the Kafka client is pinned to 3.7 because 3.8 broke SASL authentication"
WRITE_NOTE = "release trains leave every Thursday at 15:00 UTC"
ANCHOR = re.compile(r"<!-- session:(\S+) turn:(\S+) transcript:(\S+) -->")
HASH = re.compile(r'"chunk_hash":\s*"([0-9a-f]{8,})"')


@pytest.fixture(scope="module")
def model() -> Iterator[FakeResponses]:
    with FakeResponses(default_text="ok") as server:
        yield server


@pytest.fixture(scope="module")
def world(
    codex_install: CodexInstall, model: FakeResponses, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CodexWorld]:
    w = CodexWorld(
        codex_install,
        tmp_path_factory.mktemp("codex"),
        model.base_url,
        env_extra={
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMLANE_AUTO_CONTEXT": "on",
            "MEMLANE_LLM_PROVIDER": "none",
        },
    )
    w.before = w.config.read_bytes()  # type: ignore[attr-defined]
    w.install()
    yield w
    w.stop_engine()


def ok(result: RunResult) -> RunResult:
    assert result.returncode == 0, f"codex exec failed:\n{result.stdout[-2000:]}\n{result.stderr}"
    return result


def wait_for_text(world: CodexWorld, needle: str) -> str:
    wait_for(lambda: needle in world.memory_text(), 30, f"{needle!r} in the daily files")
    return world.memory_text()


@pytest.fixture(scope="module")
def session1(world: CodexWorld, model: FakeResponses) -> dict[str, Any]:
    start = len(model.requests)
    model.agent(Reply.say(FACT_ANSWER))
    result = ok(world.run(FACT_PROMPT))
    return {"result": result, "requests": model.requests[start:]}


def test_0_codex_lists_the_server_with_its_env(world: CodexWorld) -> None:
    out = subprocess.run(
        [str(world.codex.exe), "mcp", "get", "memlane", "--json"],
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    server = json.loads(out.stdout)
    text = json.dumps(server)
    assert "MEMLANE_HOME" in text and str(world.memlane_home) in text, text
    skill = world.codex_home / "skills" / "memlane-recall" / "SKILL.md"
    assert skill.is_file()


def test_1_the_exchange_is_captured_with_its_anchor(
    world: CodexWorld, session1: dict[str, Any]
) -> None:
    text = wait_for_text(world, "bluefinch-42")
    result: RunResult = session1["result"]
    assert "hook: SessionStart Completed" in result.stderr, result.stderr
    assert "hook: Stop Completed" in result.stderr, result.stderr
    anchors = [a for a in ANCHOR.findall(text) if a[0] == result.session_id]
    assert anchors, f"{text}\n{world.engine_log()[-3000:]}"
    _, turn, transcript = anchors[-1]
    assert Path(transcript) == world.rollout(result.session_id)
    items = [json.loads(line) for line in Path(transcript).read_text().splitlines()]
    anchored = [i for i in items if i.get("payload", {}).get("id") == turn]
    assert anchored and FACT_ANSWER in json.dumps(anchored[0]), turn
    first = next(r for r in session1["requests"] if r.tool_names)
    assert any("Project memory (memlane)" in t for t in first.texts("developer"))
    assert "memlane-recall" in first.all_text  # the skill is listed
    assert not world.hook_failures()


def test_2_the_next_session_carries_it(
    world: CodexWorld, model: FakeResponses, session1: dict[str, Any]
) -> None:
    wait_for_text(world, "bluefinch-42")
    old_day = date.fromisoformat(world.daily_files()[-1].stem) - timedelta(days=5)
    old = world.project / ".memsearch" / "memory" / f"{old_day.isoformat()}.md"
    old.write_text(
        f"# {old_day.isoformat()}\n\n## Session 10:00\n### 10:00\n"
        "<!-- session:old-session turn:abcd1234 transcript:/nonexistent/old.jsonl -->\n"
        f"- {OLD_NOTE}\n"
    )
    # Indexed before the session starts (the engine would catch up on its own, later).
    indexed = subprocess.run(
        [MEMLANE, "index"], cwd=world.project, env=world.env(), capture_output=True, text=True
    )
    assert indexed.returncode == 0, indexed.stderr
    question = "Why is the Kafka client pinned to 3.7, what broke with SASL authentication?"
    start = len(model.requests)
    model.agent(Reply.say("Because 3.8 broke SASL."))
    result = ok(world.run(question))
    first = next(r for r in model.requests[start:] if r.tool_names)
    developer = "\n".join(first.texts("developer"))
    assert "bluefinch-42" in developer, developer[-3000:]  # SessionStart's snapshot
    assert "Recent sessions in this project" in developer  # the sessions layer read Codex's rollout
    assert OLD_NOTE in developer  # UserPromptSubmit's auto-context
    assert question in first.texts("user")
    assert result.session_id != session1["result"].session_id


def test_3_the_model_walks_the_mcp_ladder_and_its_write_is_anchored(
    world: CodexWorld, model: FakeResponses, session1: dict[str, Any]
) -> None:
    seen: dict[str, str] = {}
    session_id = session1["result"].session_id

    def search(request: ResponsesRequest) -> Reply:
        seen["write"] = request.last_tool_result
        return Reply.call(f"{TOOL}memory_search", query="deploy codename payments")

    def expand(request: ResponsesRequest) -> Reply:
        seen["search"] = request.last_tool_result
        return Reply.call(f"{TOOL}memory_expand", chunk_hash=HASH.findall(seen["search"])[0])

    def transcript(request: ResponsesRequest) -> Reply:
        seen["expand"] = request.last_tool_result
        anchor = next(a for a in ANCHOR.findall(world.memory_text()) if a[0] == session_id)
        return Reply.call(f"{TOOL}memory_transcript", transcript_path=anchor[2], turn=anchor[1])

    def done(request: ResponsesRequest) -> Reply:
        seen["transcript"] = request.last_tool_result
        return Reply.say("bluefinch-42.")

    model.agent(
        Reply.call(f"{TOOL}memory_write", text=WRITE_NOTE), search, expand, transcript, done
    )
    result = ok(world.run("Note the release rule, then tell me the payments codename."))
    assert model.pending == 0, f"Codex stopped before the ladder's end:\n{result.stderr[-2000:]}"
    assert "bluefinch-42" in seen["search"], seen["search"]
    assert "bluefinch-42" in seen["expand"], seen["expand"]
    assert str(world.rollout(session_id)) in seen["expand"]
    assert FACT_PROMPT in seen["transcript"] and FACT_ANSWER in seen["transcript"], seen

    text = wait_for_text(world, WRITE_NOTE)
    block = text[: text.index(WRITE_NOTE)].rsplit("###", 1)[1]
    written_session, _, path = ANCHOR.findall(block)[0]
    assert written_session == result.session_id, block
    assert Path(path) == world.rollout(result.session_id)


def test_4_uninstall_restores_the_config_and_leaves_no_process(
    world: CodexWorld, model: FakeResponses
) -> None:
    world.stop_engine()
    lines = world.uninstall()
    assert world.config.read_bytes() == world.before, lines  # type: ignore[attr-defined]
    assert not (world.codex_home / "skills" / "memlane-recall").exists()
    assert not (world.codex_home / "memlane-install.json").exists()
    start = len(model.requests)
    model.agent(Reply.say("Hello."))
    result = ok(world.run("Hello?"))
    assert "hook:" not in result.stderr
    first = next(r for r in model.requests[start:] if r.tool_names)
    assert "memlane" not in json.dumps(first.body)
    assert engine_pids(world.memlane_home) == []
    assert not _processes_naming(world.root), "a process of this world is still running"


def _processes_naming(root: Path) -> list[int]:
    """Processes whose command line names a path of this world (a left-over server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if str(root).encode() in cmdline or f"MEMLANE_HOME={root}".encode() in environ:
            found.append(int(entry.name))
    return found
