"""memlane in the real OpenCode (``opencode-ai`` 1.18, ``opencode run``), issue 30 item 2.

memlane is installed by ``memlane install opencode``'s own code into an
isolated HOME; OpenCode's model is a fake OpenAI-compatible server on
127.0.0.1 (a custom provider, ``@ai-sdk/openai-compatible``, bundled in
OpenCode). The engine has no LLM (captures are verbatim digests) and no
embedder (lexical search), as a new user without settings.

1. Session 1 tells a fact: its turn is captured, anchored to OpenCode's
   session id and to the JSONL copy the engine keeps of that session.
2. Session 2's model request carries it (the session snapshot in the system
   prompt, the prompt's recall as a hidden text part).
3. The MCP tools answer inside OpenCode (``memlane_memory_search``,
   ``memlane_memory_transcript`` reading OpenCode's session: L3), and the
   sessions layer finds the OpenCode session.
4. Uninstall leaves OpenCode's configuration byte-identical; no memlane
   process is left behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from opencode_harness import MEMLANE, OpencodeInstall, OpencodeWorld, RunResult

from fake_llm import FakeModel, Reply
from helpers import wait_for

pytestmark = pytest.mark.e2e

FACT = "Remember this: the deploy codename for project falcon is BLUEHERON."
ANCHOR = re.compile(r"<!-- session:(\S+) turn:(\S+) transcript:(\S+) -->")


@pytest.fixture(scope="module")
def model() -> Iterator[FakeModel]:
    with FakeModel(default_text="Done.") as server:
        yield server


@pytest.fixture(scope="module")
def world(
    opencode_install: OpencodeInstall, model: FakeModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OpencodeWorld]:
    w = OpencodeWorld(
        opencode_install,
        tmp_path_factory.mktemp("opencode"),
        model.base_url,
        env_extra={"MEMLANE_EMBEDDING_PROVIDER": "none"},
    )
    # OpenCode's own first run: what it writes into its configuration is its own.
    ok(w.run("hello"))
    w.before_install = w.config_snapshot()  # type: ignore[attr-defined]
    w.install()
    yield w
    w.stop_engine()


def ok(result: RunResult) -> RunResult:
    assert result.returncode == 0, f"opencode run failed:\n{result.stdout[-2000:]}\n{result.stderr}"
    return result


def anchors(world: OpencodeWorld) -> list[tuple[str, str, str]]:
    return [m.groups() for m in ANCHOR.finditer(world.memory_text())]


@pytest.fixture(scope="module")
def first_session(world: OpencodeWorld, model: FakeModel) -> str:
    model.agent(Reply.say("Noted: BLUEHERON is the deploy codename."))
    ok(world.run(FACT))
    session = world.sessions()[-1]
    wait_for(
        lambda: any(s == session for s, _, _ in anchors(world)),
        timeout=60,
        what=f"the turn of OpenCode session {session} in the daily file",
    )
    return session


def test_session_is_captured_with_an_anchor_naming_opencodes_session(
    world: OpencodeWorld, first_session: str
) -> None:
    session, turn, transcript = next(a for a in anchors(world) if a[0] == first_session)
    assert "BLUEHERON" in world.memory_text()
    assert Path(transcript) == world.copy_of(first_session)
    lines = [json.loads(line) for line in Path(transcript).read_text().splitlines()]
    header = lines[0]
    assert header["agent"] == "opencode" and header["id"] == session
    assert header["opencode"]["db"] == str(world.db)
    assert header["cwd"] == str(world.project)
    # The anchor's turn is OpenCode's own id of the answer.
    assert turn.startswith("msg_") and turn in {line.get("id") for line in lines}
    assert any("BLUEHERON" in json.dumps(line) for line in lines[1:])


def test_second_session_request_carries_the_memory(
    world: OpencodeWorld, model: FakeModel, first_session: str
) -> None:
    before = len(model.agent_requests)
    model.agent(Reply.say("It is BLUEHERON."))
    ok(world.run("What is the deploy codename for project falcon?"))
    request = model.agent_requests[before]
    system = "\n".join(m["content"] for m in request.body["messages"] if m["role"] == "system")
    assert "BLUEHERON" in system, "the session snapshot is not in the system prompt"
    assert [m["role"] for m in request.body["messages"]].count("system") >= 2  # OpenCode's + ours
    assert "memlane" in system.lower()


def test_mcp_tools_answer_and_read_opencodes_session(
    world: OpencodeWorld, model: FakeModel, first_session: str
) -> None:
    _, turn, transcript = next(a for a in anchors(world) if a[0] == first_session)
    before = len(model.agent_requests)
    model.agent(
        Reply.call("memlane_memory_search", query="deploy codename falcon"),
        Reply.call("memlane_memory_transcript", transcript_path=transcript, turn=turn),
        Reply.say("Found it."),
    )
    ok(world.run("Look up the falcon deploy codename in memory."))
    requests = model.agent_requests[before:]
    assert "memlane_memory_search" in requests[0].tool_names
    assert "BLUEHERON" in requests[1].last_tool_result
    l3 = requests[2].last_tool_result
    assert "opencode session" in l3 and first_session in l3
    assert "BLUEHERON" in l3


def test_sessions_layer_finds_the_opencode_session(
    world: OpencodeWorld, first_session: str
) -> None:
    env = world.env(MEMLANE_HOME=str(world.memlane_home), MEMLANE_ENGINE="off")
    out = subprocess.run(
        [MEMLANE, "-C", str(world.project), "sessions", "search", "BLUEHERON falcon", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)["hits"]
    mine = [h for h in hits if h["session_id"] == first_session]
    assert mine, hits
    assert {h["transcript"] for h in mine} == {str(world.copy_of(first_session))}
    assert any("BLUEHERON" in h["text"] and h["role"] == "user" for h in mine)


def test_uninstall_restores_the_configuration_and_leaves_no_process(
    world: OpencodeWorld, first_session: str
) -> None:
    # Run last in this module (pytest keeps file order).
    world.uninstall()
    assert world.config_snapshot() == world.before_install  # type: ignore[attr-defined]
    world.stop_engine()
    wait_for(lambda: not memlane_processes(world), timeout=30, what="no memlane process left")
    # OpenCode without memlane runs as before.
    ok(world.run("hello again"))
    assert not memlane_processes(world)


def memlane_processes(world: OpencodeWorld) -> list[int]:
    """Processes whose environment names this world's MEMLANE_HOME (sidecars, engine, MCP)."""
    needle = f"MEMLANE_HOME={world.memlane_home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found
