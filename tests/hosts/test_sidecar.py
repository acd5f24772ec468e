"""``memlane sidecar``: the DESIGN §9 protocol over a real subprocess's stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane.core.scope import resolve_scope
from memlane.store.anchor import parse_anchor


class Client:
    """A host: sends requests, answers the sidecar's llm.complete requests."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.next_id = 1
        self.llm_requests: list[dict[str, Any]] = []
        self.answer_llm: Callable[[dict[str, Any]], dict[str, Any]] = lambda p: {
            "text": "- the agent did something worth remembering"
        }

    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the sidecar closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))
        return self.wait_for(request_id)

    def wait_for(self, request_id: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            if message.get("method") == "llm.complete":
                self.llm_requests.append(message["params"])
                reply = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": self.answer_llm(message["params"]),
                }
                self.send_line(json.dumps(reply))
                continue
            if message.get("id") == request_id:
                return message

    def result(self, method: str, params: Any = None) -> Any:
        reply = self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def sidecar(project: Path) -> Iterator[Client]:
    env = {**os.environ, "MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli.main", "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    client = Client(proc)
    try:
        yield client
    finally:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _start(client: Client, project: Path, transcript: str = "/tmp/x/session.jsonl") -> Any:
    return client.result(
        "session_start",
        {"cwd": str(project), "session_id": "s-1", "transcript_path": transcript, "host": "pi"},
    )


def test_session_start_answers_without_waiting_for_the_model(
    sidecar: Client, project: Path
) -> None:
    started = time.monotonic()
    result = _start(sidecar, project)
    elapsed = time.monotonic() - started
    assert "memory_search" in result["snapshot"] and result["notices"] == []
    assert elapsed < 5.0  # no model load on this path (it warms in the background)


def test_capture_goes_through_the_hosts_llm_and_lands_anchored(
    sidecar: Client, project: Path
) -> None:
    _start(sidecar, project)
    sidecar.answer_llm = lambda p: {"text": "- the user and the agent chose port 8080 for the api"}
    queued = sidecar.result(
        "agent_settled",
        {
            "exchange": {
                "user": "which port for the api?",
                "assistant": "Use 8080.",
                "aborted": False,
                "entry_id": "ab12cd34",
                "session_id": "s-1",
                "transcript_path": "/tmp/x/session.jsonl",
            }
        },
    )
    assert queued == {"queued": True}
    flushed = sidecar.result("session_shutdown", {})
    assert flushed == {"flushed": True, "pending": 0}
    assert sidecar.llm_requests and "which port for the api?" in sidecar.llm_requests[0]["prompt"]
    assert "model" not in sidecar.llm_requests[0]  # the host picks its cheapest model
    text = next(resolve_scope(project).store.glob("*.md")).read_text()
    assert "- the user and the agent chose port 8080 for the api" in text
    anchor = parse_anchor(text)
    assert anchor is not None and anchor.turn == "ab12cd34"
    assert anchor.transcript == "/tmp/x/session.jsonl"


def test_gated_exchange_is_not_queued(sidecar: Client, project: Path) -> None:
    _start(sidecar, project)
    result = sidecar.result(
        "agent_settled", {"exchange": {"user": "hi", "assistant": "", "aborted": False}}
    )
    assert result == {"queued": False, "reason": "the assistant produced no text"}


def test_snapshot_and_tools(sidecar: Client, project: Path) -> None:
    _start(sidecar, project)
    injection = sidecar.result("before_agent_start", {"prompt": "hello"})
    assert injection["message"] is None and "memory_search" in injection["system_append"]
    wrote = sidecar.result(
        "tool", {"name": "memory_write", "arguments": {"text": "the staging db is on port 5433"}}
    )
    assert "Saved to" in wrote["text"] and wrote["details"]["anchor"]["session"] == "s-1"
    sidecar.result("session_shutdown", {})  # settles the index
    _start(sidecar, project)
    found = sidecar.result(
        "tool", {"name": "memory_search", "arguments": {"query": "staging db port", "k": 3}}
    )
    assert "5433" in found["text"]
    chunk_hash = found["details"]["hits"][0]["chunk_hash"]
    expanded = sidecar.result(
        "tool", {"name": "memory_expand", "arguments": {"chunk_hash": chunk_hash}}
    )
    assert "5433" in expanded["text"] and expanded["details"]["anchor"]["session"] == "s-1"
    status = sidecar.result("tool", {"name": "memory_status", "arguments": {}})
    assert "auto-context" in status["text"] and status["details"]["session"]["session_id"] == "s-1"
    compacted = sidecar.result("session_compact", {})
    assert "5433" in compacted["snapshot"]  # rebuilt: today's write is in it now


def test_errors_are_json_rpc_errors_and_serving_goes_on(sidecar: Client, project: Path) -> None:
    sidecar.send_line("this is not json")
    reply = sidecar.read()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    reply = sidecar.call("no_such_method", {})
    assert reply["error"]["code"] == -32601 and "session_start" in reply["error"]["message"]
    reply = sidecar.call("session_start", {"cwd": str(project)})
    assert reply["error"]["code"] == -32602 and "session_id" in reply["error"]["message"]
    reply = sidecar.call("before_agent_start", {"prompt": "x"})
    assert reply["error"]["code"] == -32000 and "session_start" in reply["error"]["message"]
    reply = sidecar.call("tool", {"name": "memory_nope", "arguments": {}})
    assert reply["error"]["code"] == -32000 and "memory_search" in reply["error"]["message"]
    reply = sidecar.call("tool", {"name": "memory_search", "arguments": {"k": 3}})
    assert "missing required argument 'query'" in reply["error"]["message"]
    assert _start(sidecar, project)["snapshot"]  # still serving


def test_stdin_eof_flushes_captures_and_exits(sidecar: Client, project: Path) -> None:
    _start(sidecar, project)
    sidecar.result(
        "agent_settled",
        {"exchange": {"user": "remember the deploy key rotation", "assistant": "Noted."}},
    )
    assert sidecar.proc.stdin is not None
    # The host may vanish right away; the capture's llm.complete then fails
    # and the exchange is written as a digest, never lost.
    sidecar.proc.stdin.close()
    assert sidecar.proc.wait(30) == 0
    text = next(resolve_scope(project).store.glob("*.md")).read_text()
    assert "remember the deploy key rotation" in text or "something worth" in text


def test_a_lone_surrogate_still_gets_a_reply(sidecar: Client, project: Path) -> None:
    _start(sidecar, project)
    # JSON.stringify of a string cut inside an emoji: a lone \ud83d escape.
    line = (
        '{"jsonrpc":"2.0","id":77,"method":"tool","params":{"name":"memory_write",'
        '"arguments":{"text":"the deploy went fine \\ud83d"}}}'
    )
    sidecar.send_line(line)
    reply = sidecar.wait_for(77)
    assert "result" in reply, reply
    assert "\ufffd" in reply["result"]["details"]["text"]


def test_deeply_nested_json_is_a_parse_error_not_a_crash(sidecar: Client, project: Path) -> None:
    sidecar.send_line('{"jsonrpc":"2.0","id":3,"method":"tool","params":' + "[" * 100_000)
    reply = sidecar.read()
    assert reply["error"]["code"] == -32700
    assert _start(sidecar, project)["snapshot"]  # still serving


def test_a_failed_session_start_never_writes_into_the_previous_project(
    sidecar: Client, project: Path, tmp_path: Path
) -> None:
    _start(sidecar, project)
    sidecar.result("session_shutdown", {})
    other = tmp_path / "other"
    reply = sidecar.call("session_start", {"cwd": str(other), "session_id": "s-2", "host": "pi"})
    assert "error" in reply
    wrote = sidecar.call("tool", {"name": "memory_write", "arguments": {"text": "for other"}})
    assert "error" in wrote  # names the missing project; never lands in the first one
    assert not any("for other" in f.read_text() for f in resolve_scope(project).store.glob("*.md"))
