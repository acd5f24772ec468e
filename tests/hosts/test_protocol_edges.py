"""Malformed JSON-RPC input against the real ``memlane mcp`` and ``memlane sidecar``.

Each case of the table is a line a broken or hostile client could send;
each must get the JSON-RPC 2.0 error the specification names for it (and
the id the request carried, when that id is valid), as one line of strict
JSON, and the server must answer a valid request right after. Every reply
is read with a deadline: a missing reply fails at once instead of hanging.

One process of each server serves the whole module (a start costs
seconds), so every case also shows the server survived the ones before.
It gets its own isolated home, as the autouse fixture gives each test.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import MEMLANE, NOW, make_project, wait_for, with_ctrl_c
from memlane.core.scope import resolve_scope
from memlane.hosts.mcp.thin import check_mcp_line
from memlane.hosts.wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_LINE_BYTES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Refused,
    check_line,
    is_blank,
)

pytestmark = pytest.mark.subprocess

# How long a reply may take before the test fails. It comes in milliseconds
# on an idle machine, but a 10 MB line read and refused, or a server started
# cold, took over 20 s on one at load 10-30 (a late reply then answered the
# next test's request): this only catches a server that never answers.
REPLY_TIMEOUT_S = 180.0
# Stands for the server's tool-call method in the table: tools/call (MCP) or tool (sidecar).
CALL = "CALL_METHOD"


def _strict_json(line: bytes) -> Any:
    """Parse as strict JSON: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"the server wrote {constant}, which is not JSON: {line[:200]!r}")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


class Server:
    """A real memlane server process on pipes; every read has a deadline."""

    def __init__(self, kind: str, project: Path, env: dict[str, str]) -> None:
        self.kind = kind
        self.project = project
        self.call_method = "tools/call" if kind == "mcp" else "tool"
        self.proc = subprocess.Popen(
            with_ctrl_c([*MEMLANE, kind, "-C", str(project)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buffer = b""
        self.next_id = 1000
        if kind == "mcp":
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "edge-test", "version": "0"},
            }
            assert "result" in self.request("initialize", init)
            self.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, raw: bytes) -> None:
        try:
            self._stdin.write(raw + b"\n")
            self._stdin.flush()
        except BrokenPipeError:
            # The server is gone: say how it ended, not only that the pipe broke.
            code = self.proc.wait(REPLY_TIMEOUT_S)
            raise AssertionError(
                f"memlane {self.kind} exited ({code}) before reading: {self.stderr()}"
            ) from None

    def send_message(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode())

    def read(self, timeout_s: float = REPLY_TIMEOUT_S) -> Any:
        """The next line, parsed as strict JSON; ``TimeoutError`` if none comes."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"memlane {self.kind} sent no reply within {timeout_s:g} s")
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    raise AssertionError(f"memlane {self.kind} closed stdout: {self.stderr()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return _strict_json(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_message(message)
        reply = self.read()
        assert isinstance(reply, dict) and reply.get("id") == self.next_id, reply
        return reply

    def still_serving(self) -> None:
        """A valid request right after: answered with a result."""
        assert "result" in self.request(self.valid_method, {}), self.kind

    @property
    def valid_method(self) -> str:
        """A request with nothing to do, that extra params do not disturb."""
        return "ping" if self.kind == "mcp" else "session_shutdown"

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request(self.call_method, {"name": name, "arguments": arguments})

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def close(self) -> int:
        self._stdin.close()
        try:
            return self.proc.wait(REPLY_TIMEOUT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


def _isolated_env(home: Path, cache: Path) -> dict[str, str]:
    """The environment the autouse ``isolated_home`` gives a test, for a
    process that outlives one test: no user memlane settings, its own home."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MEMLANE_", "PI_MEMSEARCH_", "MEMSEARCH_"))
        and name != "PI_CODING_AGENT_SESSION_DIR"
    }
    env.update(
        MEMLANE_HOME=str(home),
        MEMLANE_CACHE_DIR=str(cache),
        PI_CODING_AGENT_DIR=str(home / "pi-agent"),
        CLAUDE_CONFIG_DIR=str(home / "claude"),
        MEMLANE_EMBEDDING_PROVIDER="none",
        MEMLANE_NOW=NOW.isoformat(),
    )
    return env


@pytest.fixture(scope="module", params=["mcp", "sidecar"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_cache: Path
) -> Iterator[Server]:
    home = tmp_path_factory.mktemp(f"{request.param}-home")
    project = make_project(tmp_path_factory.mktemp(f"{request.param}-project"))
    running = Server(request.param, project, _isolated_env(home, shared_cache))
    try:
        yield running
    finally:
        assert running.close() == 0, running.stderr()


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    code: int
    id: Any = None  # the id the error must name (None: null)
    batch: int = 0  # a batch reply: an array of this many errors


def _request(request_id: Any = 1, method: str = "ping", **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, **extra}).encode()


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


CASES = [
    Case("bad JSON", b'{"jsonrpc": "2.0", "id": 1, "method": ', PARSE_ERROR),
    Case("invalid UTF-8", b'{"jsonrpc":"2.0","id":1,"method":"p\xff\xfeng"}', PARSE_ERROR),
    Case("a UTF-16 byte order mark", b"\xff\xfe{}", PARSE_ERROR),
    Case("a bare number", b"42", INVALID_REQUEST),
    Case("a bare string", b'"ping"', INVALID_REQUEST),
    Case("a bare null", b"null", INVALID_REQUEST),
    Case("an empty batch", b"[]", INVALID_REQUEST),
    Case("a batch of bare values", b"[1, 2]", INVALID_REQUEST, batch=2),
    Case("a batch of requests", b"[" + _request(5) + b"," + _request(6) + b"]", INVALID_REQUEST,
         batch=2),
    Case("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":7,"method":"ping"}', INVALID_REQUEST, 7),
    Case("no jsonrpc member", b'{"id":8,"method":"ping"}', INVALID_REQUEST, 8),
    Case("a method that is a number", b'{"jsonrpc":"2.0","id":9,"method":5}', INVALID_REQUEST, 9),
    Case("id NaN", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', INVALID_REQUEST),
    Case("id -Infinity", b'{"jsonrpc":"2.0","id":-Infinity,"method":"ping"}', INVALID_REQUEST),
    Case("id an object", _request({"a": 1}), INVALID_REQUEST),
    Case("id an array", _request([1]), INVALID_REQUEST),
    Case("id a boolean", _request(True), INVALID_REQUEST),
    Case("id a fraction", _request(1.5), INVALID_REQUEST),
    Case("id null", _request(None), INVALID_REQUEST),
    Case("id past 2^53", _request(2**53 + 1), INVALID_REQUEST),
    Case("id of 30 digits", _request(10**30), INVALID_REQUEST),
    Case("id a lone surrogate", b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}',
         INVALID_REQUEST),
    Case("params a number", _request(10, params=5), INVALID_REQUEST, 10),
    Case("NaN inside params", b'{"jsonrpc":"2.0","id":11,"method":"ping","params":{"x":NaN}}',
         INVALID_REQUEST, 11),
    Case("params an array", _request(12, CALL, params=["memory_status"]), INVALID_PARAMS, 12),
    Case("a tool name that is not a string", _request(13, CALL, params={"name": 5}),
         INVALID_PARAMS, 13),
    Case("an unknown method", _request(14, "no/such/method"), METHOD_NOT_FOUND, 14),
    Case("300 levels of nesting",
         f'{{"jsonrpc":"2.0","id":15,"method":"ping","params":{_nested(300)}}}'.encode(),
         INVALID_REQUEST, 15),
    Case("100,000 open brackets", b'{"jsonrpc":"2.0","id":16,"method":"ping","params":'
         + b"[" * 100_000, PARSE_ERROR),
    Case("a response with neither result nor error", b'{"jsonrpc":"2.0","id":17}',
         INVALID_REQUEST),
    Case("a 10 MB garbage line", b"x" * (10 * 1024 * 1024), INVALID_REQUEST),
]  # fmt: skip


def test_the_table_is_long_enough() -> None:
    assert len(CASES) >= 15 and len({c.name for c in CASES}) == len(CASES)
    assert len(CASES[-1].raw) > MAX_LINE_BYTES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_malformed_message_gets_its_json_rpc_error(server: Server, case: Case) -> None:
    raw = case.raw.replace(CALL.encode(), server.call_method.encode())
    # The garbage line is written from a thread: the server reads it while it comes.
    writer = threading.Thread(target=server.send, args=(raw,))
    writer.start()
    reply = server.read()
    writer.join(REPLY_TIMEOUT_S)
    replies = reply if case.batch else [reply]
    if case.batch:
        assert isinstance(reply, list) and len(reply) == case.batch, reply
    else:
        assert isinstance(reply, dict), reply
    for one in replies:
        assert one["jsonrpc"] == "2.0" and "result" not in one, one
        assert one["error"]["code"] == case.code, one
        assert isinstance(one["error"]["message"], str) and one["error"]["message"], one
        if not case.batch:
            assert one["id"] == case.id, one
    server.still_serving()


def test_a_batch_names_each_request_it_refuses(server: Server) -> None:
    server.send(b"[" + _request(21) + b", 3, " + _request(22) + b"]")
    reply = server.read()
    assert [(r["id"], r["error"]["code"]) for r in reply] == [
        (21, INVALID_REQUEST),
        (None, INVALID_REQUEST),
        (22, INVALID_REQUEST),
    ]
    assert "batch" in reply[0]["error"]["message"]
    server.still_serving()


def test_a_lone_surrogate_in_a_tool_call_is_written_and_answered(server: Server) -> None:
    # JSON.stringify of a string cut inside an emoji: a lone \ud83d escape.
    template = (
        '{"jsonrpc":"2.0","id":31,"method":"CALL","params":{"name":"memory_write",'
        '"arguments":{"text":"the deploy went fine \\ud83d today"}}}'
    )
    server.send(template.replace("CALL", server.call_method).encode())
    reply = server.read()
    assert reply["id"] == 31 and "result" in reply, reply
    assert not reply["result"].get("isError"), reply
    daily = resolve_scope(server.project).store / f"{NOW.date().isoformat()}.md"
    assert "the deploy went fine \ufffd today" in daily.read_text(encoding="utf-8")
    found = server.tool("memory_search", {"query": "deploy went fine"})
    assert "\ufffd" in json.dumps(found, ensure_ascii=False), found


def test_nesting_300_deep_inside_tool_arguments_is_refused(server: Server) -> None:
    arguments = f'{{"text":"deep","extra":{_nested(300)}}}'
    template = '{"jsonrpc":"2.0","id":41,"method":"CALL","params":{"name":"memory_write",'
    server.send(
        (template.replace("CALL", server.call_method) + f'"arguments":{arguments}}}}}').encode()
    )
    reply = server.read()
    assert reply["id"] == 41 and reply["error"]["code"] == INVALID_REQUEST, reply
    assert "64 levels" in reply["error"]["message"]
    server.still_serving()


def test_a_line_just_under_the_limit_is_read_whole(server: Server) -> None:
    # The cap refuses what is over it, never what fits.
    params = {"pad": "y" * (MAX_LINE_BYTES - 200)}
    line = json.dumps({"jsonrpc": "2.0", "id": 51, "method": server.valid_method, "params": params})
    assert MAX_LINE_BYTES - 200 < len(line) <= MAX_LINE_BYTES
    writer = threading.Thread(target=server.send, args=(line.encode(),))
    writer.start()
    reply = server.read()
    writer.join(REPLY_TIMEOUT_S)
    assert reply["id"] == 51 and "result" in reply, str(reply)[:500]


def test_ctrl_c_ends_the_mcp_server_while_its_reader_waits_for_the_client(project: Path) -> None:
    # The reader is blocked on stdin, which the client keeps open: Ctrl-C must
    # still end the process (it used to wait for the client's next line).
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_NOW": NOW.isoformat()}
    running = Server("mcp", project, env)
    try:
        running.still_serving()
        running.proc.send_signal(signal.SIGINT)
        assert running.proc.wait(REPLY_TIMEOUT_S) == 130
        assert "Traceback" not in running.stderr()
    finally:
        running.close()


# -- blank lines ----------------------------------------------------------------------------

#: Lines that are not messages: no answer, as NDJSON readers and the MCP SDK skip them.
BLANK_LINES = [b"", b"   ", b"\t", b" \t \r", b"\x0b\x0c"]


def test_blank_and_whitespace_only_lines_get_no_answer(server: Server) -> None:
    for raw in BLANK_LINES:
        server.send(raw)
    # The next line written is this request's answer: none came for the blank ones.
    server.still_serving()


# -- fuzz: every line gets exactly the answers it calls for --------------------------------

_fuzz_ids = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.none(), st.just(1.5))
_fuzz_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
_fuzz_messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
        "id": _fuzz_ids,
        # ping: served by memlane mcp, unknown to the sidecar; no/such: unknown to both.
        "method": st.sampled_from(["ping", "no/such", 5]),
        "params": st.one_of(st.just({}), _fuzz_values),
        "result": _fuzz_values,
    },
)
_fuzz_lines = st.one_of(
    st.lists(st.sampled_from(list(b" \t\r\x0b\x0c")), max_size=6).map(bytes),
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    _fuzz_values.map(lambda v: json.dumps(v).encode()),
    _fuzz_messages.map(lambda m: json.dumps(m).encode()),
    st.lists(_fuzz_messages, max_size=3).map(lambda b: json.dumps(b).encode()),
).map(lambda line: line.replace(b"\n", b" "))  # one line each


def _expected_answers(server: Server, line: bytes) -> int:
    """How many lines the server writes for *line*: none for a blank line, a
    notification or an answer, one for anything else (a batch: one array)."""
    if is_blank(line):
        return 0
    checked = check_mcp_line(line) if server.kind == "mcp" else check_line(line)
    if isinstance(checked, Refused):
        return 0 if checked.reply is None else 1
    return 1 if checked.is_request else 0


@settings(max_examples=150, deadline=None)
@given(line=_fuzz_lines)
def test_fuzz_every_line_gets_exactly_the_answers_it_calls_for(server: Server, line: bytes) -> None:
    server.send(line)
    # A request of our own right behind it: whatever came before its answer came for the line.
    server.next_id += 1
    sentinel = f"sentinel-{server.next_id}"
    message = {"jsonrpc": "2.0", "id": sentinel, "method": server.valid_method, "params": {}}
    server.send_message(message)
    answers = []
    while (reply := server.read()) is not None:
        if isinstance(reply, dict) and reply.get("id") == sentinel:
            assert "result" in reply, reply
            break
        answers.append(reply)
    assert len(answers) == _expected_answers(server, line), (line, answers)


def test_a_blank_line_inside_a_stream_of_requests_changes_nothing(server: Server) -> None:
    server.next_id += 1
    first = server.next_id
    message = {"jsonrpc": "2.0", "id": first, "method": server.valid_method, "params": {}}
    server.send(b"\n  \n" + json.dumps(message).encode() + b"\n\n")
    assert server.read()["id"] == first
    server.still_serving()


# -- a big write does not hold the others ---------------------------------------------------


def test_a_search_is_answered_while_a_write_is_still_being_scanned(
    tmp_path: Path, shared_cache: Path
) -> None:
    # The write is held right after its scan for secrets (the step that costs
    # seconds per MB) until the search was answered: no timing decides the order.
    trace, resume = tmp_path / "trace", tmp_path / "resume"
    env = _isolated_env(tmp_path / "home", shared_cache)
    env.update(
        MEMLANE_FAULT_TRACE=str(trace),
        MEMLANE_FAULT_PAUSE="write.redacted",
        MEMLANE_FAULT_RESUME=str(resume),
    )
    running = Server("mcp", make_project(tmp_path), env)
    try:
        write = _request(
            71,
            "tools/call",
            params={"name": "memory_write", "arguments": {"text": "the nightly export moved"}},
        )
        running.send(write)
        wait_for(
            lambda: trace.exists() and "write.redacted" in trace.read_text().split(),
            REPLY_TIMEOUT_S,
            "the write's scan",
        )
        running.send(_request(72, "tools/call", params={"name": "memory_status", "arguments": {}}))
        answered = running.read()
        assert answered["id"] == 72 and not answered["result"].get("isError"), answered
        resume.touch()
        written = running.read()
        assert written["id"] == 71 and not written["result"].get("isError"), written
        found = running.tool("memory_search", {"query": "nightly export", "mode": "lexical"})
        assert "nightly export" in json.dumps(found), found
    finally:
        resume.touch()
        assert running.close() == 0, running.stderr()
