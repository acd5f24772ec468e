"""memlane inside the real Claude Code (2.1, headless ``claude -p``), end to end.

memlane is installed by ``memlane install claude-code``'s own code (the
default plugin mode, user settings) into an isolated ``HOME``; Claude Code
talks to the scripted fake Messages API (``tests/fake_anthropic.py``), runs
memlane's hooks (the hook client and the warm engine) and starts ``memlane
mcp``. Distillation goes to the same fake (``llm.provider anthropic``), as a
side request.

1. Session 1: its exchange is captured, distilled and anchored to Claude
   Code's transcript and the assistant message's uuid.
2. Session 2: the snapshot with session 1's note reaches the model in the
   SessionStart context; UserPromptSubmit injects an older matching memory.
3. Session 3: the model walks memory_write → memory_search → memory_expand →
   memory_transcript through the MCP server; the write is anchored to session 3.
4. Compaction: a note written mid-session reaches the session's snapshot once
   Claude Code compacts (PreCompact, SessionStart ``compact``), not before.

The tests of this module share one Claude Code world and run in order; each
``claude -p`` costs seconds, so each run serves several assertions.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from claude_harness import ClaudeInstall, ClaudeWorld, RunResult

from fake_anthropic import FakeClaude, Request, ToolUse, Turn

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_memlane_memlane__"
REDIS_PROMPT = "Which cache should the sessions service use?"
REDIS_ANSWER = (
    "Use Redis for the hot cache, with 5 minute TTLs, because Memcached lacks persistence."
)
REDIS_BULLET = "the user and the agent chose Redis for the hot cache with 5 minute TTLs"
KAFKA_BULLET = "the team pinned the Kafka client to 3.7 because 3.8 broke SASL authentication"
DEPLOY_NOTE = "The deploy script needs DEPLOY_ENV=staging before it runs the migrations."
COMPACT_NOTE = "Releases go to staging for a day before production."
ANCHOR = re.compile(r"<!-- session:(\S+) turn:(\S+) transcript:(.+?) -->")
HASH = re.compile(r"\b[0-9a-f]{16}\b")


def distil(request: Request) -> str:
    """The fake distiller (memlane's side requests): a fixed bullet per known exchange."""
    text = request.everything
    if "Which cache" in text:
        return f"- {REDIS_BULLET}\n- Memcached was rejected for lacking persistence"
    return "- the user and the agent talked about the project"


@pytest.fixture(scope="module")
def model() -> Iterator[FakeClaude]:
    with FakeClaude(side=distil) as server:
        yield server


@pytest.fixture(scope="module")
def world(
    claude_install: ClaudeInstall, model: FakeClaude, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClaudeWorld]:
    w = ClaudeWorld(
        claude_install,
        tmp_path_factory.mktemp("cc"),
        model.base_url,
        env_extra={
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMLANE_AUTO_CONTEXT": "on",
            "MEMLANE_LLM_PROVIDER": "anthropic",
            "MEMLANE_LLM_BASE_URL": model.base_url,
            "MEMLANE_LLM_API_KEY": "env:ANTHROPIC_API_KEY",
        },
    )
    lines = w.install()
    assert any("plugin" in line for line in lines), lines
    yield w
    w.stop_engine()


def wait_for_text(world: ClaudeWorld, needle: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    text = world.memory_text()
    while needle not in text and time.monotonic() < deadline:
        time.sleep(0.1)
        text = world.memory_text()
    return text


def ok(result: RunResult) -> RunResult:
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout[-2000:]}\n{result.stderr}"
    assert not result.result.get("is_error"), result.result
    return result


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tool_uses(transcript: Path) -> list[str]:
    """The tools the model called in a transcript, in order."""
    return [
        str(block.get("name"))
        for e in entries(transcript)
        if e.get("type") == "assistant"
        for block in e["message"].get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


@pytest.fixture(scope="module")
def session1(world: ClaudeWorld, model: FakeClaude) -> dict[str, Any]:
    start = len(model.requests)
    model.agent(Turn.say(REDIS_ANSWER))
    result = ok(world.run(REDIS_PROMPT))
    assert result.text == REDIS_ANSWER
    return {"result": result, "requests": model.requests[start:]}


def test_0_claude_code_validates_the_plugin_and_its_marketplace(world: ClaudeWorld) -> None:
    outputs = []
    for target in (world.plugin_dir, world.plugin_dir / ".claude-plugin" / "marketplace.json"):
        out = subprocess.run(
            [str(world.claude.exe), "plugin", "validate", str(target)],
            env=world.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Validation passed" in out.stdout, out.stdout
        outputs.append(out.stdout)
    for part in ("skills: memlane:recall", "commands: memlane:memory", "mcpServers: memlane"):
        assert part in outputs[0], outputs[0]
    assert outputs[0].count("hooks: ") == 4  # no SessionEnd hook (docs/adr/0023)


def test_1_the_exchange_is_captured_with_its_anchor(
    world: ClaudeWorld, model: FakeClaude, session1: dict[str, Any]
) -> None:
    text = wait_for_text(world, REDIS_BULLET)
    assert f"- {REDIS_BULLET}" in text, f"{text}\n{world.engine_log()[-3000:]}"
    session_id = session1["result"].session_id
    anchors = [a for a in ANCHOR.findall(text) if a[0] == session_id]
    assert anchors, text
    _, turn, transcript = anchors[-1]
    assert Path(transcript) == world.transcript(session_id)
    by_uuid = {e.get("uuid"): e for e in entries(Path(transcript))}
    anchored = by_uuid[turn]
    assert anchored["type"] == "assistant"
    assert REDIS_ANSWER in json.dumps(anchored["message"]["content"])

    # what reached the model: the SessionStart context as a system message and the
    # plugin's skill (its MCP tools may still be connecting: test 3 calls them); the
    # distillation went to the side of the fake
    first = next(r for r in session1["requests"] if r.kind == "agent")
    assert "Project memory (memlane)" in first.system
    assert "memlane:recall" in first.everything
    distils = [r for r in model.side_requests if REDIS_PROMPT in r.everything]
    assert distils, "memlane's distillation never reached the model"
    assert not world.hook_failures()


def test_2_the_next_session_carries_it_and_the_prompt_gets_a_matching_memory(
    world: ClaudeWorld, model: FakeClaude, session1: dict[str, Any]
) -> None:
    wait_for_text(world, REDIS_BULLET)
    # An older memory, outside the snapshot (today and yesterday), for auto-context to find.
    old_day = date.fromisoformat(world.daily_files()[-1].stem) - timedelta(days=5)
    old = world.project / ".memsearch" / "memory" / f"{old_day.isoformat()}.md"
    old.write_text(
        f"# {old_day.isoformat()}\n\n## Session 10:00\n### 10:00\n"
        "<!-- session:old-session turn:abcd1234 transcript:/nonexistent/old.jsonl -->\n"
        f"- {KAFKA_BULLET}\n"
    )
    question = "Why is the Kafka client pinned to 3.7, what broke with SASL authentication?"
    start = len(model.requests)
    model.agent(Turn.say("Because 3.8 broke SASL."))
    result = ok(world.run(question))
    (first, *_) = [r for r in model.requests[start:] if r.kind == "agent"]
    # SessionStart: the snapshot with session 1's note
    assert REDIS_BULLET in first.system, first.system[-3000:]
    # UserPromptSubmit: the older note matching the prompt
    assert "UserPromptSubmit hook additional context" in first.system
    prompt_context = first.system.split("UserPromptSubmit hook additional context", 1)[1]
    assert KAFKA_BULLET in prompt_context, prompt_context[:2000]
    assert question == first.prompt
    assert result.session_id != session1["result"].session_id


def test_3_the_model_walks_the_mcp_ladder_and_its_write_is_anchored(
    world: ClaudeWorld, model: FakeClaude, session1: dict[str, Any]
) -> None:
    seen: dict[str, str] = {}

    def search(request: Request) -> Turn:
        seen["write"] = request.last_tool_result
        return Turn.call(f"{TOOL}memory_search", query="Redis hot cache TTL")

    def expand(request: Request) -> Turn:
        seen["search"] = request.last_tool_result
        return Turn.call(f"{TOOL}memory_expand", chunk_hash=HASH.findall(seen["search"])[0])

    def transcript(request: Request) -> Turn:
        # The anchor as memory_expand gave it (text or JSON), else the one in the store.
        seen["expand"] = request.last_tool_result
        path = re.search(r'transcript(?:_path)?"?\s*[:=]\s*"?(/[^"\s]+\.jsonl)', seen["expand"])
        turn = re.search(r'turn"?\s*[:=]\s*"?([0-9a-f-]{8,})', seen["expand"])
        if not (path and turn):
            session_id = session1["result"].session_id
            anchor = next(a for a in ANCHOR.findall(world.memory_text()) if a[0] == session_id)
            return Turn.call(f"{TOOL}memory_transcript", transcript_path=anchor[2], turn=anchor[1])
        return Turn.call(
            f"{TOOL}memory_transcript", transcript_path=path.group(1), turn=turn.group(1)
        )

    def done(request: Request) -> Turn:
        seen["transcript"] = request.last_tool_result
        seen["errors"] = json.dumps([r.name for r in request.tool_results if r.is_error])
        return Turn.say("Redis, with 5 minute TTLs.")

    model.agent(
        Turn.call(f"{TOOL}memory_write", text=DEPLOY_NOTE), search, expand, transcript, done
    )
    result = ok(world.run("Note the deploy rule, then tell me what we chose for the cache."))
    assert model.pending() == 0, "Claude Code stopped before the ladder's end"
    assert seen["errors"] == "[]", seen
    assert REDIS_BULLET in seen["search"], seen["search"]
    assert REDIS_BULLET in seen["expand"], seen["expand"]
    assert str(world.transcript(session1["result"].session_id)) in seen["expand"]
    assert REDIS_PROMPT in seen["transcript"] and REDIS_ANSWER in seen["transcript"]

    # the write is in the store, anchored to the Claude Code session that made it
    text = wait_for_text(world, DEPLOY_NOTE)
    block = text[: text.index(DEPLOY_NOTE)].rsplit("###", 1)[1]
    session_id, _, path = ANCHOR.findall(block)[0]
    assert session_id == result.session_id, block
    assert Path(path) == world.transcript(result.session_id)


def test_4_compaction_rebuilds_the_snapshot(world: ClaudeWorld, model: FakeClaude) -> None:
    """Within one run: a note written mid-session is not in the session's snapshot until
    Claude Code compacts (the turn reports a context near full) and memlane rebuilds it."""
    seen: list[Request] = []

    def after_compaction(request: Request) -> Turn:
        seen.append(request)
        return Turn.say("Noted: staging first.")

    start = len(model.requests)
    write = Turn(
        tool_uses=(ToolUse(f"{TOOL}memory_write", {"text": COMPACT_NOTE}),), input_tokens=995_000
    )
    model.agent(write, after_compaction)
    result = ok(world.run("Record the release rule."))
    assert seen, f"Claude Code stopped before the turn after compaction: {result.text}"
    requests = model.requests[start:]
    assert [r for r in requests if r.kind == "compact"], "Claude Code did not compact"
    first = next(r for r in requests if r.kind == "agent")
    assert COMPACT_NOTE not in first.system  # the session's first snapshot
    assert COMPACT_NOTE in seen[0].system.split("SessionStart hook additional context")[-1]
    # PreCompact and SessionStart(compact) both ran, and the rebuilt snapshot is in the
    # compacted session's transcript
    compacted = [
        e
        for e in entries(world.transcript(result.session_id))
        if e.get("type") == "attachment"
        and e["attachment"].get("hookName") == "SessionStart:compact"
    ]
    assert any(COMPACT_NOTE in json.dumps(e) for e in compacted), compacted
    assert not world.hook_failures()


def test_5_recall_runs_the_ladder_in_a_forked_subagent(
    world: ClaudeWorld, model: FakeClaude
) -> None:
    seen: list[Request] = []

    def answer(request: Request) -> Turn:
        seen.append(request)
        return Turn.say(f"Memory (L1) says: {REDIS_BULLET}.")

    start = len(model.requests)
    model.agent(Turn.call(f"{TOOL}memory_search", query="cache Redis"), answer)
    # Claude Code does not wait for its MCP servers: memlane's is up before the skill runs.
    result = ok(world.run("/memlane:recall What cache did we choose?"))
    forked = next(r for r in model.requests[start:] if r.kind == "agent")
    assert "You run in a forked context" in forked.prompt  # the skill's body
    assert "What cache did we choose?" in forked.prompt
    assert REDIS_BULLET in seen[0].last_tool_result, seen[0].last_tool_result
    assert REDIS_BULLET in result.text
    # forked: the ladder is in the subagent's transcript, the session keeps only the answer
    main = world.transcript(result.session_id)
    (subagent,) = (main.parent / main.stem / "subagents").glob("*.jsonl")
    assert tool_uses(subagent) == [f"{TOOL}memory_search"]
    assert REDIS_BULLET in subagent.read_text()
    assert tool_uses(main) == []


def test_6_the_memory_command_reports_status(world: ClaudeWorld, model: FakeClaude) -> None:
    seen: list[Request] = []

    def report(request: Request) -> Turn:
        seen.append(request)
        return Turn.say("memlane: memory on.")

    model.agent(Turn.call(f"{TOOL}memory_status"), report)
    ok(world.run("/memlane:memory status"))
    assert seen, "the command's turn never called memory_status"
    asked = seen[0]
    assert "/memory status" in asked.prompt and "memory_status" in asked.prompt
    (status,) = [r for r in asked.tool_results if r.name == f"{TOOL}memory_status"]
    assert not status.is_error and str(world.project) in status.text


def test_7_after_uninstall_claude_code_runs_without_memlane(
    world: ClaudeWorld, model: FakeClaude
) -> None:
    world.stop_engine()
    lines = world.uninstall()
    assert any("removed the memlane plugin directory" in line for line in lines), lines
    assert not world.plugin_dir.exists()
    start = len(model.requests)
    model.agent(Turn.say("Hello."))
    result = ok(world.run("Hello?"))
    assert result.text == "Hello." and not result.stderr.strip()
    first = next(r for r in model.requests[start:] if r.kind == "agent")
    assert "memlane" not in first.everything
    known = world.home / ".claude" / "plugins" / "known_marketplaces.json"
    assert "memlane" not in json.loads(known.read_text())
