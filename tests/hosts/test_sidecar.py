"""``memlane sidecar``: its JSON-RPC protocol, line by line, as a host speaks it.

Most tests run the sidecar in this process (``Sidecar`` on a pair of pipes,
on the test's clock, in a thread): the same reader, engine thread and
handlers as ``memlane sidecar``, without a process start. The smoke test at
the end runs the real command, for what only a process shows: stdout carries
protocol lines only, and stdin EOF ends it with exit code 0.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, make_project, wait_for
from memlane.core.scope import resolve_scope
from memlane.engine.sessions.registry import close_stores
from memlane.hosts.jsonrpc import Connection
from memlane.hosts.pi.sidecar import Sidecar
from memlane.store.anchor import parse_anchor

# How long the host waits for any one line before the test fails (a hung
# sidecar fails the test instead of hanging the run).
READ_TIMEOUT_S = 30.0


class Lines:
    """Lines from a file descriptor, with a deadline per line (select + os.read)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""

    def readline(self, timeout_s: float = READ_TIMEOUT_S) -> bytes:
        """The next line ("" at EOF); ``TimeoutError`` when none comes in time."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line from the sidecar within {timeout_s:g} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                line, self._buffer = self._buffer, b""
                return line
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"


class Client:
    """A host: sends requests, answers the sidecar's llm.complete requests."""

    def __init__(self, stdin: IO[bytes], stdout_fd: int) -> None:
        self.stdin = stdin
        self.lines = Lines(stdout_fd)
        self.next_id = 1
        self.llm_requests: list[dict[str, Any]] = []
        self.llm_ids: list[Any] = []
        self.notifications: list[dict[str, Any]] = []
        # None: the host's model never answers (the request is left unanswered).
        self.answer_llm: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda p: {
            "text": "- the agent did something worth remembering"
        }

    def send_line(self, line: str) -> None:
        self.stdin.write(line.encode() + b"\n")
        self.stdin.flush()

    def close_input(self) -> None:
        """The host goes away: the sidecar reads EOF."""
        if not self.stdin.closed:
            self.stdin.close()

    def read(self, timeout_s: float = READ_TIMEOUT_S) -> dict[str, Any]:
        line = self.lines.readline(timeout_s)
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
                self.llm_ids.append(message["id"])
                answer = self.answer_llm(message["params"])
                if answer is not None:
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                    self.send_line(json.dumps(reply))
                continue
            if "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            if message.get("id") == request_id:
                return message

    def result(self, method: str, params: Any = None) -> Any:
        reply = self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]


class InProcess(Client):
    """The sidecar in a thread of this process, on two pipes."""

    def __init__(self, project: Path, clock: FixedClock, **options: Any) -> None:
        """``options``: the ``Sidecar``'s own (``full``: the command line it runs)."""
        to_sidecar, host_stdin = os.pipe()
        host_stdout, from_sidecar = os.pipe()
        self._sidecar_ends = (os.fdopen(to_sidecar, "rb"), os.fdopen(from_sidecar, "wb"))
        super().__init__(os.fdopen(host_stdin, "wb"), host_stdout)
        self.sidecar = Sidecar(Connection(*self._sidecar_ends), project, clock=clock, **options)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._serve, name="test-sidecar", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.exit_code = self.sidecar.run()

    def wait(self, timeout_s: float = READ_TIMEOUT_S) -> int | None:
        """The exit code ``run`` returned once the sidecar finished (None: still running)."""
        self._thread.join(timeout_s)
        return self.exit_code

    def close(self) -> None:
        self.close_input()
        self._thread.join(READ_TIMEOUT_S)
        for end in self._sidecar_ends:
            end.close()
        os.close(self.lines.fd)
        assert not self._thread.is_alive(), "the sidecar did not stop at EOF"


@pytest.fixture
def sidecar(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InProcess]:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS", "50")
    client = InProcess(project, clock)
    try:
        yield client
    finally:
        client.close()
        close_stores()


def _start(client: Client, project: Path, transcript: str = "/tmp/x/session.jsonl") -> Any:
    return client.result(
        "session_start",
        {"cwd": str(project), "session_id": "s-1", "transcript_path": transcript, "host": "pi"},
    )


def _daily_text(project: Path) -> str:
    files = sorted(resolve_scope(project).store.glob("*.md"))
    assert files, "no daily file was written"
    return "\n".join(f.read_text() for f in files)


def test_session_start_answers_without_waiting_for_the_model(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI() as server:
        # The embedding model is an endpoint that holds every request: a model
        # that is still loading, longer than the host waits for any answer.
        server.embeddings_open.clear()
        monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "openai")
        monkeypatch.setenv("MEMLANE_EMBEDDING_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", "fake-embedder")
        monkeypatch.setenv("MEMLANE_EMBEDDING_TIMEOUT_S", str(READ_TIMEOUT_S * 4))
        client = InProcess(project, clock)
        try:
            # The warm-up's request is held until the end of this block, and the
            # embedder would wait on it for far longer than the host waits for
            # session_start: the answer can only come from not waiting for it.
            result = _start(client, project)
            assert "memory_search" in result["snapshot"] and result["notices"] == []
            wait_for(lambda: server.embedding_requests, READ_TIMEOUT_S, "the embedder warm-up")
        finally:
            server.embeddings_open.set()
            client.close()
            close_stores()


def test_capture_goes_through_the_hosts_llm_and_lands_anchored(
    sidecar: InProcess, project: Path
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
    text = _daily_text(project)
    assert "- the user and the agent chose port 8080 for the api" in text
    anchor = parse_anchor(text)
    assert anchor is not None and anchor.turn == "ab12cd34"
    assert anchor.transcript == "/tmp/x/session.jsonl"


def test_a_model_that_never_answers_is_cancelled_at_the_cap_and_the_exchange_kept(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_SESSION_SHUTDOWN_CAP_MS", "1500")
    client = InProcess(project, clock)
    try:
        _start(client, project)
        client.answer_llm = lambda p: None  # the host's model hangs
        exchange = {"user": "which queue for the mailer?", "assistant": "Use SQS, not Redis."}
        assert client.result("agent_settled", {"exchange": exchange}) == {"queued": True}
        flushed = client.result("session_shutdown", {})
        # The capture's deadline passed: written as a digest (nothing lost), and
        # the engine told the host to stop the call it no longer waits for.
        assert flushed == {"flushed": True, "pending": 0}
        assert len(client.llm_ids) == 1
        assert client.notifications == [
            {"jsonrpc": "2.0", "method": "llm.cancel", "params": {"id": client.llm_ids[0]}}
        ]
        text = _daily_text(project)
        assert "which queue for the mailer?" in text and "distillation failed" in text
    finally:
        client.close()
        close_stores()


def test_gated_exchange_is_not_queued(sidecar: InProcess, project: Path) -> None:
    _start(sidecar, project)
    result = sidecar.result(
        "agent_settled", {"exchange": {"user": "hi", "assistant": "", "aborted": False}}
    )
    assert result == {"queued": False, "reason": "the assistant produced no text"}
    assert sidecar.llm_requests == []


def test_an_exchange_that_only_restated_a_tools_answer_is_not_queued(
    sidecar: InProcess, project: Path
) -> None:
    _start(sidecar, project)
    fact = "the staging db is on port 5433"
    sidecar.result("tool", {"name": "memory_write", "arguments": {"text": fact}})
    exchange = {"user": "note that the staging db is on port 5433", "assistant": f"Saved: {fact}."}
    reply = sidecar.call("agent_settled", {"exchange": {**exchange, "tools": "memory_write"}})
    assert reply["error"]["code"] == -32602 and "exchange.tools" in reply["error"]["message"]
    sidecar.result("tool", {"name": "memory_write", "arguments": {"text": fact}})
    result = sidecar.result("agent_settled", {"exchange": {**exchange, "tools": ["memory_write"]}})
    assert result["queued"] is False and "only restated" in result["reason"]
    # The host reports another tool: the exchange did work and is captured.
    sidecar.result("tool", {"name": "memory_write", "arguments": {"text": fact}})
    result = sidecar.result(
        "agent_settled", {"exchange": {**exchange, "tools": ["memory_write", "bash"]}}
    )
    assert result == {"queued": True}
    sidecar.result("session_shutdown", {})


def test_snapshot_and_tools(sidecar: InProcess, project: Path) -> None:
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


def test_errors_are_json_rpc_errors_and_serving_goes_on(sidecar: InProcess, project: Path) -> None:
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


def test_stdin_eof_flushes_captures_and_ends_the_sidecar(sidecar: InProcess, project: Path) -> None:
    _start(sidecar, project)
    sidecar.result(
        "agent_settled",
        {"exchange": {"user": "remember the deploy key rotation", "assistant": "Noted."}},
    )
    # The host may vanish right away; the capture's llm.complete then fails
    # and the exchange is written as a digest, never lost.
    sidecar.close_input()
    assert sidecar.wait() == 0
    text = _daily_text(project)
    assert "remember the deploy key rotation" in text or "something worth" in text


def test_a_lone_surrogate_still_gets_a_reply(sidecar: InProcess, project: Path) -> None:
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


def test_deeply_nested_json_is_a_parse_error_not_a_crash(sidecar: InProcess, project: Path) -> None:
    sidecar.send_line('{"jsonrpc":"2.0","id":3,"method":"tool","params":' + "[" * 100_000)
    reply = sidecar.read()
    assert reply["error"]["code"] == -32700
    assert _start(sidecar, project)["snapshot"]  # still serving


def test_a_failed_session_start_never_writes_into_the_previous_project(
    sidecar: InProcess, project: Path, tmp_path: Path
) -> None:
    _start(sidecar, project)
    sidecar.result("tool", {"name": "memory_write", "arguments": {"text": "for the first"}})
    sidecar.result("session_shutdown", {})
    other = tmp_path / "other"
    reply = sidecar.call("session_start", {"cwd": str(other), "session_id": "s-2", "host": "pi"})
    assert "error" in reply
    wrote = sidecar.call("tool", {"name": "memory_write", "arguments": {"text": "for other"}})
    assert "error" in wrote  # names the missing project; never lands in the first one
    assert str(other) in wrote["error"]["message"]
    text = _daily_text(project)
    assert "for the first" in text and "for other" not in text


def _open_sessions(sidecar: InProcess) -> dict[str, list[str]]:
    """Each open project's scope and the ids of its open sessions."""
    return {
        str(p["scope"]): [str(s["id"]) for s in p["sessions"]]
        for p in sidecar.sidecar.projects.describe()
    }


def test_a_new_session_ends_the_previous_one_and_keeps_the_project(
    sidecar: InProcess, project: Path
) -> None:
    _start(sidecar, project)
    first = sidecar.sidecar.session
    sidecar.result("session_start", {"cwd": str(project), "session_id": "s-2", "host": "pi"})
    assert sidecar.sidecar.session is not first and sidecar.sidecar.session is not None
    assert _open_sessions(sidecar) == {str(project): ["s-2"]}  # one project, one session


def test_a_session_in_another_directory_switches_the_project(
    sidecar: InProcess, project: Path, tmp_path: Path
) -> None:
    other = make_project(tmp_path, "other")
    _start(sidecar, project)
    sidecar.result("session_start", {"cwd": str(other), "session_id": "s-2", "host": "pi"})
    assert _open_sessions(sidecar) == {str(project): [], str(other): ["s-2"]}
    sidecar.result("tool", {"name": "memory_write", "arguments": {"text": "for the other one"}})
    assert "for the other one" in _daily_text(other)


# -- the real process ------------------------------------------------------------------------


@pytest.mark.subprocess
def test_the_sidecar_process_writes_only_protocol_lines_and_exits_0_at_eof(
    project: Path,
) -> None:
    env = {
        **os.environ,
        "MEMLANE_EMBEDDING_PROVIDER": "none",
        "MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli.main", "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        host = Client(proc.stdin, proc.stdout.fileno())
        assert "memory_search" in _start(host, project)["snapshot"]  # every line read is JSON
        wrote = host.result(
            "tool", {"name": "memory_write", "arguments": {"text": "the queue is RabbitMQ"}}
        )
        assert "Saved to" in wrote["text"]
        # The answer says more than the memory just written (an answer that
        # only restated it would not be captured again: engine/journal/echo.py).
        answer = "RabbitMQ, listening on port 5672."
        host.result(
            "agent_settled",
            {"exchange": {"user": "which queue?", "assistant": answer, "entry_id": "e1"}},
        )
        host.close_input()
        # Whatever comes until stdout closes is JSON-RPC too (the capture's llm.complete).
        rest = []
        while line := host.lines.readline():
            rest.append(line)
        assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest), rest
        assert proc.wait(READ_TIMEOUT_S) == 0, proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    text = _daily_text(project)
    assert "the queue is RabbitMQ" in text and "which queue?" in text and "5672" in text
