"""pi without memlane, then with it again, end to end with the real pi (issue 29).

With ``MEMLANE_COMMAND=/nonexistent/memlane`` the pi package cannot start
memlane at all, and does what pi-memsearch does without its backend
(degraded.ts):

1. pi keeps working; ``memory_write`` appends a well-formed, anchored,
   redacted entry to today's daily file itself.
2. A settled exchange is captured as a digest entry (anchored to pi's real
   session file and entry, redacted); the next prompt's system prompt holds
   the snapshot of the daily file.
3. ``memory_search`` says in one line that it is unavailable and why,
   ``memory_transcript`` reads the first session around its anchor,
   ``memory_status`` and ``/memory status`` say why and how to fix it.
4. With memlane back, the next sessions index what was written meanwhile:
   a search finds the written memory and the captured exchange.

Apart: with the embedding endpoint down, ``memory_status`` in a real pi
session says the embedder is unavailable, not "ready".

The tests of the first part share one pi world and run in order.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall, PiWorld, read_session, sidecar_pids

from fake_llm import FakeModel, Reply, Request
from helpers import NOW, embedded_chunks, stop_engines, wait_for
from memlane.engine.project import Memory
from memlane.store.damage import damage_in
from memlane.store.layout import list_markdown_files
from secret_fakes import SECRETS

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")
MISSING = "/nonexistent/memlane"
TOKEN = next(case.secret for case in SECRETS if case.name == "github classic pat")
FACT = "Deploys are frozen on Fridays"
REMEMBER = "Remember that deploys are frozen on Fridays."
PROMPT = "Which cache should the sessions service use?"
ANSWER = "Use Redis for the hot cache, with 5 minute TTLs: Memcached lacks persistence."
#: The engine's first index of the world (a model load on a loaded machine): minutes at worst.
INDEX_WAIT_S = 600
ANCHOR = re.compile(r"<!-- session:(\S+) turn:(\S+) transcript:(.+?) -->")


@pytest.fixture(scope="module")
def world(
    pi_install: PiInstall,
    fake_model: FakeModel,
    tmp_path_factory: pytest.TempPathFactory,
    shared_cache: Path,
) -> Iterator[PiWorld]:
    root = tmp_path_factory.mktemp("pi-degraded")
    w = PiWorld(
        pi_install,
        root,
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(root / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
        },
    )
    w.install_package(MEMLANE)
    yield w
    stop_engines(root / "memlane-home")
    for pid in sidecar_pids(w.project):
        os.kill(pid, signal.SIGKILL)


def _daily(world: PiWorld) -> str:
    path = world.project / ".memsearch" / "memory" / f"{NOW.date().isoformat()}.md"
    return path.read_text() if path.exists() else ""


def _recording(seen: list[str], then: Reply | Callable[[], Reply]) -> Callable[[Request], Reply]:
    def record(request: Request) -> Reply:
        seen.append(request.last_tool_result)
        return then() if callable(then) else then

    return record


def test_1_memory_write_without_memlane_appends_an_anchored_redacted_entry(
    world: PiWorld, fake_model: FakeModel
) -> None:
    seen: list[str] = []
    fake_model.agent(
        Reply.call("memory_write", text=f"{FACT}; the CI token is {TOKEN}"),
        _recording(seen, Reply.say("noted")),
    )
    result = world.run(REMEMBER, MEMLANE_COMMAND=MISSING)
    assert result.returncode == 0, result.stderr
    assert result.final_text() == "noted"
    assert seen[0].startswith(f"Saved to {world.project}/.memsearch/memory/"), seen[0]
    assert "1 secret(s) were redacted before saving." in seen[0]

    session_file = world.session_files()[-1]
    header, _ = read_session(session_file)
    text = _daily(world)
    assert TOKEN[4:20] not in text
    lines = text.split("\n")
    assert lines[:4] == [f"# {NOW.date().isoformat()}", "", "## Session 10:00", "### 10:00"], text
    session, turn, transcript = ANCHOR.fullmatch(lines[4]).groups()  # type: ignore[union-attr]
    assert (session, Path(transcript)) == (header["id"], session_file)
    assert re.fullmatch(r"[0-9a-f]{8}", turn)
    assert lines[5] == f"- {FACT}; the CI token is [REDACTED:github-token]"
    # The run only called memlane's own tool: not captured a second time.
    assert "[no distillation" not in text


def test_2_a_settled_exchange_is_captured_as_a_digest_and_the_snapshot_reads_the_file(
    world: PiWorld, fake_model: FakeModel
) -> None:
    fake_model.agent(Reply.say(ANSWER))
    result = world.run(f"{PROMPT} My key is {TOKEN}", MEMLANE_COMMAND=MISSING)
    assert result.returncode == 0, result.stderr
    assert result.final_text() == ANSWER
    system = fake_model.agent_requests[-1].system
    assert "## Project memory (memlane)" in system and FACT in system

    session_file = world.session_files()[-1]
    _, entries = read_session(session_file)
    answered = next(e for e in reversed(entries) if e.get("message", {}).get("role") == "assistant")
    text = _daily(world)
    assert TOKEN[4:20] not in text
    entry = text.split("\n### ")[-1]
    assert entry.split("\n")[1] == (
        f"<!-- session:{read_session(session_file)[0]['id']} turn:{answered['id']} "
        f"transcript:{session_file} -->"
    )
    assert entry.split("\n")[2:5] == [
        "- [no distillation: memlane was unavailable]",
        f"- user asked: {PROMPT} My key is [REDACTED:github-token]",
        f"- agent answered: {ANSWER}",
    ]
    assert text.count("## Session ") == 2  # one per session


def test_3_search_says_unavailable_transcript_answers_status_says_why(
    world: PiWorld, fake_model: FakeModel
) -> None:
    first = world.session_files()[0]
    _, entries = read_session(first)
    asked = next(e for e in entries if e.get("message", {}).get("role") == "user")
    seen: list[str] = []
    fake_model.agent(
        Reply.call("memory_search", query="deploys"),
        _recording(
            seen, Reply.call("memory_transcript", transcript_path=str(first), turn=asked["id"])
        ),
        _recording(seen, Reply.call("memory_status")),
        _recording(seen, Reply.say("done")),
    )
    result = world.run("What do we know about deploys?", MEMLANE_COMMAND=MISSING)
    assert result.returncode == 0, result.stderr
    search, transcript, status = seen
    assert search.startswith(
        f"memory_search is unavailable in this pi session: memlane is not running (cannot run {MISSING}"
    ), search
    assert "\n" not in search and "pip install" not in search
    assert transcript.startswith(f"Transcript {first} (pi session "), transcript
    assert f"user ({asked['id']})  ◀ target\n  {REMEMBER}" in transcript
    assert status.startswith(f"memlane is not available in this pi session: cannot run {MISSING}")
    assert "pip install ." in status and "memory_write, capture" in status

    printed = world.print_mode("/memory status", MEMLANE_COMMAND=MISSING)
    assert printed.returncode == 0, printed.stderr
    # (Where pi -p prints a command's output, stdout or stderr, is /memory's own business.)
    shown = printed.stdout + printed.stderr
    assert "\nmemlane is not available in this pi session: cannot run" in f"\n{shown}", shown
    assert "memory_write, capture" in shown


def _index_state(world: PiWorld) -> dict[str, Any]:
    try:
        return dict(json.loads((world.project / ".memsearch" / ".index-state.json").read_text()))
    except (OSError, ValueError):
        return {}


def test_4_with_memlane_back_what_was_written_meanwhile_is_indexed_and_found(
    world: PiWorld, fake_model: FakeModel
) -> None:
    store = world.project / ".memsearch" / "memory"
    assert damage_in(store, list_markdown_files(store)) == [], "memlane finds a damaged line"
    memory = Memory.open(world.project)
    try:
        chunks = memory.chunks_of(store / f"{NOW.date().isoformat()}.md")
    finally:
        memory.close()
    anchored = [chunk for chunk in chunks if "<!-- session:" in chunk.content]
    assert len(anchored) == 2, [chunk.content for chunk in chunks]  # the write and the digest
    seen: list[str] = []
    fake_model.agent(
        Reply.call("memory_search", query="deploys frozen Fridays"),
        _recording(seen, Reply.say("ok")),
    )
    result = world.run("When are deploys frozen?")
    assert result.returncode == 0, result.stderr
    # The session's catch-up index may still be at work: then the search says so.
    assert FACT in seen[0] or "the index is still being built" in seen[0], seen[0]

    wait_for(lambda: embedded_chunks(world.project, FACT) >= 1, INDEX_WAIT_S, "the write indexed")
    wait_for(
        lambda: embedded_chunks(world.project, "Use Redis") >= 1, INDEX_WAIT_S, "the digest indexed"
    )
    fake_model.agent(
        Reply.call("memory_search", query="deploys frozen Fridays"),
        _recording(seen, Reply.call("memory_search", query="Redis hot cache sessions service")),
        _recording(seen, Reply.say("ok")),
    )
    again = world.run("And which cache did we pick?")
    assert again.returncode == 0, again.stderr
    assert FACT in seen[-2], seen[-2]
    assert "Use Redis for the hot cache" in seen[-1], seen[-1]
    assert _index_state(world).get("status") in ("ok", "running"), _index_state(world)


@pytest.fixture
def dead_embedder_world(
    pi_install: PiInstall, fake_model: FakeModel, tmp_path: Path, shared_cache: Path
) -> Iterator[PiWorld]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    w = PiWorld(
        pi_install,
        tmp_path / "world",
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(tmp_path / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_MODEL": "dead-embed",
            "MEMLANE_EMBEDDING_BASE_URL": f"http://127.0.0.1:{port}/v1",
        },
    )
    w.install_package(MEMLANE)
    yield w
    stop_engines(tmp_path / "memlane-home")
    for pid in sidecar_pids(w.project):
        os.kill(pid, signal.SIGKILL)


def test_memory_status_in_pi_says_a_dead_embedding_endpoint_is_unavailable(
    dead_embedder_world: PiWorld, fake_model: FakeModel
) -> None:
    world = dead_embedder_world
    fake_model.agent(Reply.say("noted"))
    assert world.run("Remember: the hot cache is Redis.").returncode == 0
    seen: list[str] = []
    fake_model.agent(
        Reply.call("memory_search", query="hot cache"),
        _recording(seen, Reply.call("memory_status")),
        _recording(seen, Reply.say("ok")),
    )
    result = world.run("What is the hot cache?")
    assert result.returncode == 0, result.stderr
    search, status = seen
    assert "semantic search unavailable" in search or "lexical" in search, search
    line = next(line for line in status.splitlines() if " — embedder " in line)
    assert "embedder unavailable:" in line and "embedder ready" not in line, status
