"""The Claude Code host's pieces in this process: the exchange reader, the running-session
record behind memory_write's anchor, the path rules both sides of the socket share, and
one embedder for every project of the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_cc_hooks import SESSION, write_turn

from _transcript_builders import ClaudeSession
from helpers import make_project
from memlane.core import link
from memlane.core.scope import resolve_scope
from memlane.engine import warm_engine
from memlane.hosts.claude_code import hook, running
from memlane.hosts.claude_code.exchange import read_turn
from memlane.hosts.server.projects import Projects
from memlane.store.anchor import ANCHOR_RE


def test_the_exchange_is_the_last_prompt_and_every_answer_after_it(project: Path) -> None:
    turn = write_turn(project, question="why does it need sudo?", answer="It writes to /etc.")
    found = read_turn(str(project / f"{SESSION}.jsonl"), SESSION)
    assert found is not None
    exchange = found.exchange
    assert exchange.user == "why does it need sudo?"
    assert exchange.assistant == "It writes to /etc."
    assert exchange.tools == ("Bash",)
    assert exchange.entry_id == turn
    assert exchange.transcript_path == str(project / f"{SESSION}.jsonl")


def test_a_long_transcript_is_read_from_its_tail(project: Path) -> None:
    t = ClaudeSession(SESSION)
    for n in range(3000):  # well past the first tail read
        t.user(f"question {n} " + "x" * 200)
        t.assistant([{"type": "text", "text": f"answer {n}"}], msg_id=f"msg_{n}")
    t.user("the last question")
    for n in range(1500):  # a long answer: the prompt is far before the end
        t.assistant([{"type": "text", "text": f"part {n} " + "y" * 200}], msg_id="msg_last")
    path = t.write(project / "long.jsonl")
    found = read_turn(str(path), SESSION)
    assert found is not None
    assert found.exchange.user == "the last question"
    assert found.exchange.assistant.startswith("part 0 ")


def test_a_turn_without_an_answer_yet_is_no_exchange(project: Path) -> None:
    t = ClaudeSession(SESSION)
    t.user("a question")
    path = t.write(project / "t.jsonl")
    assert read_turn(str(path), SESSION) is None


def test_a_stop_before_the_transcript_holds_the_answer_takes_the_one_it_names(
    project: Path,
) -> None:
    t = ClaudeSession(SESSION)
    prompt = t.user("is the cache warm?")
    path = t.write(project / "t.jsonl")
    early = read_turn(str(path), SESSION, "Yes, it is warm.")
    assert early is not None
    assert early.exchange.user == "is the cache warm?"
    assert early.exchange.assistant == "Yes, it is warm."
    assert early.exchange.entry_id == prompt  # the anchor's turn: no answer line yet
    answer = t.assistant([{"type": "text", "text": "Yes, it is warm."}], msg_id="msg_1")
    t.write(path)
    late = read_turn(str(path), SESSION, "Yes, it is warm.")
    assert late is not None
    assert late.exchange.assistant == "Yes, it is warm."
    assert late.exchange.entry_id == answer
    assert late.key == early.key == prompt  # one turn, however much of it each Stop saw
    assert early.exchange.entry_id in late.ids


def test_clients_and_status_find_the_same_files(isolated_home: Path) -> None:
    place = link.Place()
    assert place.home == str(isolated_home.resolve())
    assert Path(place.failures) == warm_engine.failures_path()
    assert Path(place.directory).parent / "claude-code" / "running" == running.records_dir()


def _write_over_mcp(project: Path, text: str, **env: str) -> str:
    """``memory_write`` through the real ``memlane mcp`` (started by this test's
    process, which stands for Claude Code) and the engine behind it; the store's text."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli.fast", "mcp", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", **env},
    )
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    call = {"name": "memory_write", "arguments": {"text": text}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ]
    out, err = proc.communicate(
        "".join(json.dumps(line) + "\n" for line in lines).encode(), timeout=120
    )
    replies = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0 and "Traceback" not in err.decode(), err.decode()
    assert [r["id"] for r in replies] == [1, 2], replies
    assert not replies[1]["result"].get("isError"), replies[1]
    return "".join(p.read_text() for p in resolve_scope(project).store.glob("*.md"))


@pytest.mark.subprocess
def test_memory_write_over_mcp_is_anchored_to_the_running_claude_code_session(
    project: Path,
) -> None:
    collection = resolve_scope(project).collection
    transcript = str(project / f"{SESSION}.jsonl")
    claude = os.getpid()  # this test started the server: it stands for Claude Code
    running.note(collection, "older-session", "/tmp/older.jsonl", claude)
    running.note(collection, SESSION, transcript, claude)
    written = _write_over_mcp(project, "the deploy needs the VPN")
    anchor = ANCHOR_RE.search(written)
    assert anchor is not None
    assert f"session:{SESSION}" in anchor.group(0)
    assert f"transcript:{transcript}" in anchor.group(0)


@pytest.mark.subprocess
def test_the_session_claude_code_names_to_the_server_is_its_anchor(project: Path) -> None:
    collection = resolve_scope(project).collection
    claude = os.getpid()
    running.note(collection, "older-session", "/tmp/older.jsonl", claude)
    running.note(collection, SESSION, str(project / f"{SESSION}.jsonl"), claude)
    # Claude Code sets CLAUDE_CODE_SESSION_ID for its MCP servers: that one wins.
    written = _write_over_mcp(
        project, "the deploy needs the VPN", CLAUDE_CODE_SESSION_ID="older-session"
    )
    anchor = ANCHOR_RE.search(written)
    assert anchor is not None and "session:older-session" in anchor.group(0), written


def test_the_session_claude_code_names_wins_and_an_ended_one_is_gone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collection = resolve_scope(project).collection
    running.note(collection, "a", "/tmp/a.jsonl", os.getpid())
    running.note(collection, "b", "/tmp/b.jsonl", os.getpid())
    assert running.current(collection, parent_pid=os.getpid()) == ("b", "/tmp/b.jsonl")
    assert running.current(collection, parent_pid=os.getpid(), wanted="a") == ("a", "/tmp/a.jsonl")
    running.ended(collection, "b")
    assert running.current(collection, wanted="a") == ("a", "/tmp/a.jsonl")
    records = json.loads((running.records_dir() / f"{collection}.json").read_text())
    assert set(records["sessions"]) == {"a"}


@pytest.mark.subprocess
def test_a_server_claude_code_did_not_start_gets_no_claude_code_anchor(project: Path) -> None:
    collection = resolve_scope(project).collection
    # A live Claude Code session of the project, run by a process that is not the server's parent.
    running.note(collection, SESSION, str(project / f"{SESSION}.jsonl"), os.getppid())
    assert running.current(collection, parent_pid=os.getpid()) is None
    written = _write_over_mcp(project, "the deploy needs the VPN")
    assert "the deploy needs the VPN" in written
    assert f"session:{SESSION}" not in written


def test_projects_share_one_embedder_but_not_their_writes(tmp_path: Path) -> None:
    projects = Projects()
    one = projects.for_dir(str(make_project(tmp_path, "one")))
    two = projects.for_dir(str(make_project(tmp_path, "two")))
    try:
        assert one is not two
        assert projects.for_dir(str(tmp_path / "one")) is one
        one.memory.internals.parts.embedder_state.embedder_problem = "seen by both"
        assert two.memory.internals.parts.embedder_state.embedder_problem == "seen by both"
        assert one.memory.internals.fresh is not two.memory.internals.fresh
    finally:
        projects.close()


def test_the_hook_reads_the_event_and_the_stop_guard_without_parsing_json() -> None:
    raw = json.dumps(
        {
            "session_id": "s",
            "prompt": 'say "hook_event_name": "Stop" and "stop_hook_active": true',
            "hook_event_name": "UserPromptSubmit",
        }
    ).encode()
    assert hook.field(raw, b"hook_event_name") == b"UserPromptSubmit"
    assert hook.field(raw, b"stop_hook_active") is None
    stop = json.dumps({"hook_event_name": "Stop", "stop_hook_active": True}, indent=1).encode()
    assert hook.field(stop, b"stop_hook_active") == b"true"
    assert hook.field(b'{"x": "hook_event_name"}', b"hook_event_name") is None


def test_a_session_claude_code_names_but_no_hook_reported_finds_its_transcript(
    project: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.transcripts.locate import claude_project_dir

    transcript = claude_project_dir(str(project)) / "named.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n")
    collection = resolve_scope(project).collection
    assert running.current(collection, wanted="named", cwd=str(project)) == (
        "named",
        str(transcript),
    )


def test_a_turn_counts_as_captured_only_once_it_was_queued(project: Path) -> None:
    from memlane.hosts.claude_code import turns
    from memlane.hosts.claude_code.events import Events

    projects = Projects()
    events = Events(projects)
    try:
        events.handle(
            {"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": str(project)}, None
        )
        opened = projects.for_session(SESSION, str(project))
        assert opened is not None
        session = projects.session(opened, SESSION)
        assert session is not None
        # A Stop whose agent_settled raised queued nothing: its retry is no duplicate.
        assert not turns.already_captured(session, "prompt-uuid", ("prompt-uuid",))
        assert not turns.already_captured(session, "prompt-uuid", ("prompt-uuid",))
        turns.queued(SESSION, "prompt-uuid")
        assert turns.already_captured(session, "prompt-uuid", ("prompt-uuid",))
    finally:
        turns.forget_session(SESSION)
        projects.close()


def test_a_new_sessions_background_starts_only_after_the_answer(project: Path) -> None:
    """The engine sends SessionStart's answer first; the catch-up index, the
    recovery and the warm worker are what it runs after (hook_calls.py), once
    the grace that leaves the cores to the first prompt has passed."""
    from memlane.hosts.claude_code import turns
    from memlane.hosts.claude_code.events import Events

    projects = Projects()
    events = Events(projects)
    events.background_grace_s = 3600.0  # longer than any test: it never fires by itself
    after_answer: list[Callable[[], Any]] = []
    try:
        output = events.handle(
            {"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": str(project)},
            None,
            after_answer,
        )
        assert output is not None and "hookSpecificOutput" in output
        opened = projects.for_session(SESSION, str(project))
        assert opened is not None
        session = projects.session(opened, SESSION)
        assert session is not None
        assert len(after_answer) == 1
        waiting = after_answer[0]()
        # Answered, the grace running: the recovery scan cannot have run, whatever the load.
        assert not session.internals.wait_recovery(0.05)
        waiting.cancel()
        events.background_grace_s = 0.0
        events.start_background_later(opened, session).join(60)
        assert session.internals.wait_recovery(60)
        # The same session again: nothing new to start.
        again: list[Callable[[], Any]] = []
        events.handle(
            {
                "hook_event_name": "SessionStart",
                "session_id": SESSION,
                "cwd": str(project),
                "source": "resume",
            },
            None,
            again,
        )
        assert again == []
    finally:
        turns.forget_session(SESSION)
        projects.close()
