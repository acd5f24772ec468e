"""memlane inside the real pi coding agent, end to end (issue 5's scenario).

pi 1.x runs headless (``--mode json`` / ``--mode rpc``) with the memlane pi
package installed by ``memlane install pi``'s code, against the scripted fake
OpenAI-compatible server; the package starts the real ``memlane sidecar``.

1. Session 1: a prompt and an answer → an entry in today's daily file,
   distilled by the fake model through ``llm.complete`` (the provider's
   cheapest model), anchored to pi's real session file and entry id.
2. Session 2: the stable snapshot is in the system prompt the server receives;
   the model walks memory_search → memory_expand → memory_transcript.
3. After an RPC fork and a new branch, memory_transcript on the old anchor
   still follows the anchored branch.
4. With auto-context on, the hidden message reaches the server with the hit,
   in ``pi -p`` too (its one prompt comes before the model is warm); with
   memlane gone from PATH (and no recorded command), pi still answers, search
   says it is unavailable and memory_status gives install instructions.

The tests of this module share one pi world and run in order.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall, PiWorld, read_session

from fake_llm import FakeModel, Reply, Request
from helpers import NOW

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")

REDIS_PROMPT = "Which cache should the sessions service use?"
REDIS_ANSWER = (
    "Use Redis for the hot cache, with 5 minute TTLs, because Memcached lacks persistence."
)
REDIS_BULLET = "the user and the agent chose Redis for the hot cache with 5 minute TTLs"

ANCHOR = re.compile(r"<!-- session:(\S+) turn:(\S+) transcript:(.+?) -->")
HASH = re.compile(r"\b[0-9a-f]{16}\b")


def _distil(request: Request) -> str:
    """The fake distiller: a fixed bullet per known exchange, else a generic one."""
    prompt = "\n".join(request.texts("user"))
    if "Which cache" in prompt:
        return f"- {REDIS_BULLET}\n- Memcached was rejected for lacking persistence"
    match = re.search(r"<user_message>\n(.*?)\n</user_message>", prompt, re.S)
    asked = match.group(1).strip() if match else "something"
    return f"- the user asked: {asked[:120]}"


@pytest.fixture(scope="module")
def world(
    pi_install: PiInstall,
    fake_model: FakeModel,
    tmp_path_factory: pytest.TempPathFactory,
    shared_cache: Path,
) -> Iterator[PiWorld]:
    root = tmp_path_factory.mktemp("pi-world")
    fake_model.distill = _distil
    w = PiWorld(
        pi_install,
        root,
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(root / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
        },
    )
    lines = w.install_package(MEMLANE)
    assert any("settings.json" in line for line in lines)
    yield w


@pytest.fixture(scope="module")
def session1(world: PiWorld, fake_model: FakeModel) -> dict[str, Any]:
    """Run session 1 once; the facts later parts build on."""
    fake_model.agent(Reply.say(REDIS_ANSWER))
    result = world.run(REDIS_PROMPT)
    assert result.returncode == 0, result.stderr
    assert result.final_text() == REDIS_ANSWER
    session_file = world.session_files()[-1]
    header, entries = read_session(session_file)
    return {"result": result, "file": session_file, "header": header, "entries": entries}


def _daily(world: PiWorld, day: date | None = None) -> Path:
    return world.project / ".memsearch" / "memory" / f"{(day or NOW.date()).isoformat()}.md"


def _wait_for_text(path: Path, needle: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    return text


def test_1_capture_distils_through_the_host_model_and_anchors_pi_session(
    world: PiWorld, fake_model: FakeModel, session1: dict[str, Any]
) -> None:
    text = _wait_for_text(_daily(world), REDIS_BULLET)
    assert f"- {REDIS_BULLET}" in text, text

    # distilled by the fake model via llm.complete, with the provider's cheapest model
    distills = [r for r in fake_model.distill_requests if "Which cache" in "".join(r.texts())]
    assert distills, "the sidecar's llm.complete never reached the model"
    assert distills[0].model == "fake-small"

    # the anchor names pi's real session file and the settled entry
    anchors = ANCHOR.findall(text)
    assert anchors, text
    session_id, entry_id, transcript = anchors[-1]
    assert Path(transcript) == session1["file"]
    assert session_id == session1["header"]["id"]
    by_id = {e["id"]: e for e in session1["entries"]}
    assert entry_id in by_id
    anchored = by_id[entry_id]
    assert anchored["type"] == "message" and anchored["message"]["role"] == "assistant"
    assert REDIS_ANSWER in str(anchored["message"]["content"])


def test_2_snapshot_in_system_prompt_and_the_recall_ladder(
    world: PiWorld, fake_model: FakeModel, session1: dict[str, Any]
) -> None:
    _wait_for_text(_daily(world), REDIS_BULLET)
    seen: dict[str, str] = {}

    def expand(request: Request) -> Reply:
        seen["search"] = request.last_tool_result
        hashes = HASH.findall(seen["search"])
        assert hashes, seen["search"]
        return Reply.call("memory_expand", chunk_hash=hashes[0])

    def transcript(request: Request) -> Reply:
        seen["expand"] = request.last_tool_result
        match = ANCHOR.search(seen["expand"])
        assert match, seen["expand"]
        return Reply.call("memory_transcript", transcript_path=match.group(3), turn=match.group(2))

    def answer(request: Request) -> Reply:
        seen["transcript"] = request.last_tool_result
        return Reply.say("Memory says: Redis, 5 minute TTLs.")

    fake_model.agent(
        Reply.call("memory_search", query="cache Redis TTL"), expand, transcript, answer
    )
    start = len(fake_model.agent_requests)
    result = world.run("What did we decide about the cache last time?")
    assert result.returncode == 0, result.stderr
    assert result.final_text() == "Memory says: Redis, 5 minute TTLs."
    requests = fake_model.agent_requests[start:]

    # the stable snapshot (today's memory) is in the system prompt, byte-identical every turn
    assert requests, "pi sent the model no agent turn"
    systems = [r.system for r in requests]
    assert REDIS_BULLET in systems[0], systems[0][-3000:]
    assert all(REDIS_BULLET in s for s in systems)

    # L1: the session-1 chunk
    assert REDIS_BULLET in seen["search"], seen["search"]
    # L2: its section with the anchor naming session 1
    assert REDIS_BULLET in seen["expand"]
    assert str(session1["file"]) in seen["expand"]
    # L3: the turns of session 1
    assert REDIS_PROMPT in seen["transcript"], seen["transcript"]
    assert REDIS_ANSWER in seen["transcript"]

    # the answer only restated what the ladder returned: pi's session ended
    # (captures flushed) and it was never sent to be distilled into memory
    asked = "What did we decide about the cache last time?"
    assert not [r for r in fake_model.distill_requests if asked in "".join(r.texts())]
    assert "Memory says" not in _daily(world).read_text()


def _text_of(entry: dict[str, Any]) -> str:
    content = entry.get("message", {}).get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def test_3_transcript_follows_the_anchored_branch_after_a_fork(
    world: PiWorld, fake_model: FakeModel, session1: dict[str, Any]
) -> None:
    first, second, branch = (
        "Should the job queue use Postgres advisory locks?",
        "Name the lock key jobs:lock.",
        "Name the lock key queue:lock instead.",
    )
    captured: dict[str, str] = {}

    def anchor_of(entry_id: str) -> tuple[str, str]:
        entries = ANCHOR.findall(_daily(world).read_text())
        _, turn, path = next(a for a in entries if a[1] == entry_id)
        return path, turn

    def read_old_branch(request: Request) -> Reply:
        path, turn = anchor_of(captured["old_entry"])
        return Reply.call("memory_transcript", transcript_path=path, turn=turn)

    def read_new_branch(request: Request) -> Reply:
        captured["old"] = request.last_tool_result
        path, turn = anchor_of(captured["new_entry"])
        return Reply.call("memory_transcript", transcript_path=path, turn=turn)

    def done(request: Request) -> Reply:
        captured["new"] = request.last_tool_result
        return Reply.say("Checked.")

    with world.rpc() as pi:
        fake_model.agent(Reply.say("Yes: advisory locks, one per job."))
        pi.prompt(first)
        fake_model.agent(Reply.say("The key is jobs:lock."))
        pi.prompt(second)
        old_file = pi.command("get_state")["sessionFile"]
        listing = pi.command("get_entries")
        users = [e for e in listing["entries"] if e.get("message", {}).get("role") == "user"]
        second_user = next(e for e in users if second in _text_of(e))
        captured["old_entry"] = listing["leafId"]
        assert _wait_for_text(_daily(world), f"turn:{captured['old_entry']}")

        # fork before the second prompt, then take the branch another way
        forked = pi.command("fork", entryId=second_user["id"])
        assert not forked.get("cancelled")
        fake_model.agent(Reply.say("The key is queue:lock."))
        pi.prompt(branch)
        captured["new_entry"] = pi.command("get_entries")["leafId"]
        assert _wait_for_text(_daily(world), f"turn:{captured['new_entry']}")

        fake_model.agent(read_old_branch, read_new_branch, done)
        pi.prompt("Which lock key did each branch pick?")

    # the old anchor: its own branch (first + second), not the later one
    old = captured["old"]
    assert str(old_file) in old
    assert first in old and "jobs:lock" in old, old
    assert "queue:lock" not in old
    # the new branch's anchor: first + the new branch, not the abandoned second prompt
    new = captured["new"]
    assert first in new and "queue:lock" in new, new
    assert "jobs:lock" not in new


def test_4_auto_context_hidden_message_reaches_the_model(
    world: PiWorld, fake_model: FakeModel
) -> None:
    # An older memory, outside the snapshot (today and yesterday) so auto-context injects it.
    old_day = NOW.date() - timedelta(days=5)
    bullet = "the team pinned the Kafka client to 3.7 because 3.8 broke SASL authentication"
    path = _daily(world, old_day)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.combine(old_day, datetime.min.time()).strftime("%Y-%m-%d")
    path.write_text(
        f"# {stamp}\n\n## Session 10:00\n### 10:00\n"
        "<!-- session:old-session turn:abcd1234 transcript:/nonexistent/old.jsonl -->\n"
        f"- {bullet}\n"
    )
    question = "Why is the Kafka client pinned to 3.7, what broke with SASL authentication?"
    found: list[str] = []

    def hidden_hits() -> list[str]:
        return [
            t
            for r in fake_model.agent_requests[start:]
            for t in r.texts("user")
            if bullet in t and question not in t
        ]

    start = len(fake_model.agent_requests)
    with world.rpc(MEMLANE_AUTO_CONTEXT="on") as pi:
        # The first prompts may arrive while the sidecar warms its model up (skipped, by design).
        for _ in range(8):
            fake_model.agent(Reply.say("Because 3.8 broke SASL."))
            pi.prompt(question)
            found = hidden_hits()
            if found:
                break
            time.sleep(2)
    assert found, "no auto-context message with the hit reached the model"
    assert question not in found[0]
    # hidden: stored in pi's session as a custom message that the TUI does not display
    _, entries = read_session(world.session_files()[-1])
    injected = [e for e in entries if e["type"] == "custom_message" and bullet in str(e["content"])]
    assert injected, "the auto-context message is not in pi's session"
    assert injected[0]["customType"] == "memlane-context"
    assert injected[0]["display"] is False


def test_4c_pi_p_gets_auto_context_while_the_model_loads(
    world: PiWorld, fake_model: FakeModel
) -> None:
    """``pi -p`` is one prompt, over before the model is warm: its context comes
    from the lexical leg (docs/adr/0019), not skipped (test 4 indexed the note)."""
    bullet = "the team pinned the Kafka client to 3.7 because 3.8 broke SASL authentication"
    question = "Why is the Kafka client pinned to 3.7, what broke with SASL authentication?"
    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("Because 3.8 broke SASL."))
    result = world.print_mode(question, MEMLANE_AUTO_CONTEXT="on")
    assert result.returncode == 0, result.stderr
    assert "terminate called" not in result.stderr, result.stderr
    assert result.stdout.strip() == "Because 3.8 broke SASL."
    hidden = [
        t
        for r in fake_model.agent_requests[start:]
        for t in r.texts("user")
        if bullet in t and question not in t
    ]
    assert hidden, "the one prompt of pi -p got no auto-context message"


def test_4b_pi_still_answers_without_memlane(world: PiWorld, fake_model: FakeModel) -> None:
    world.forget_command()  # no recorded memlane, and PATH has none
    try:
        seen: list[str] = []

        def status(request: Request) -> Reply:
            seen.append(request.last_tool_result)
            return Reply.call("memory_status")

        fake_model.agent(
            Reply.call("memory_search", query="anything"),
            status,
            lambda request: Reply.say("tool said: " + request.last_tool_result),
        )
        result = world.run(
            "Search memory for anything.", PATH=f"{world.pi.node.parent}:/usr/bin:/bin"
        )
        assert result.returncode == 0, result.stderr
        # Search says in one line that it is unavailable; status says how to install.
        assert seen[0].startswith("memory_search is unavailable in this pi session"), seen[0]
        final = result.final_text()
        assert final.startswith("tool said: ")
        assert "pip install ." in final
        assert "memlane install pi" in final
    finally:
        world.install_package(MEMLANE)
