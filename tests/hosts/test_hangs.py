"""No request hangs on a file: the real ``memlane mcp``, ``memlane sidecar`` and
CLI processes, with a FIFO and a device where a file is expected.

A FIFO named as a transcript used to block the engine in ``open()``, and
every later call with it; ``memlane chunks /dev/urandom`` read until killed.
Each test here gives the process a deadline: a hang fails the test.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from _transcript_builders import PiSession
from helpers import make_project, open_memory, run_memlane
from memlane.core.types import Anchor
from memlane.engine.sessions.registry import close_stores
from memlane.transcripts.locate import pi_session_dir_name

# Long enough for a cold interpreter on a busy 2-core machine; a hang blows it.
REPLY_DEADLINE_S = 60.0
PROCESS_DEADLINE_S = 60

pytestmark = pytest.mark.subprocess


class Lines:
    """Protocol lines from a pipe, each with a deadline (select + os.read)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.fd = stream.fileno()
        self.buffer = b""

    def next_message(self) -> dict[str, Any]:
        deadline = time.monotonic() + REPLY_DEADLINE_S
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply within {REPLY_DEADLINE_S:g} s: the process hangs")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                assert chunk, "the process closed its output"
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message


class Peer:
    """One JSON-RPC process on stdin/stdout."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlane.cli.main", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.lines = Lines(self.proc.stdout)
        self.next_id = 1

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write((json.dumps(message) + "\n").encode())
        self.stdin.flush()

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        request_id, self.next_id = self.next_id, self.next_id + 1
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            request["params"] = params
        self.send(request)
        while True:
            message = self.lines.next_message()
            if message.get("id") == request_id and "method" not in message:
                return message

    def close(self) -> str:
        """Close stdin, wait for the exit; the stderr text."""
        self.stdin.close()
        try:
            self.proc.wait(PROCESS_DEADLINE_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return err


@pytest.fixture
def world(project: Path, tmp_path: Path, isolated_home: Path) -> Iterator[dict[str, Path]]:
    """This project with an anchored FIFO and an anchored transcript, and
    another project with a transcript of its own."""
    fifo = tmp_path / "fifo" / "session.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    anchored = PiSession("sess-anchored")
    anchored.user("which port does staging use?", "u0000001")
    anchored.assistant("Staging listens on 2222.", "a0000001")
    anchored_path = anchored.write(tmp_path / "anchored.jsonl")
    other = make_project(tmp_path, "other")
    other_dir = isolated_home / "pi-agent" / "sessions" / pi_session_dir_name(str(other))
    other_dir.mkdir(parents=True)
    theirs = PiSession("sess-theirs")
    theirs.user("what is the launch code?", "u0000009")
    theirs.assistant("Their launch plan is secret.", "a0000009")
    other_path = theirs.write(other_dir / "theirs.jsonl")
    with open_memory(project) as mem:
        mem.write("staging port noted", Anchor("sess-anchored", "a0000001", str(anchored_path)))
        mem.write("a pipe was anchored here", Anchor("sess-fifo", "t0000001", str(fifo)))
    close_stores()
    yield {"fifo": fifo, "anchored": anchored_path, "other": other_path}


def _mcp_tool(server: Peer, name: str, **arguments: Any) -> tuple[bool, str]:
    reply = server.call("tools/call", {"name": name, "arguments": arguments})
    assert "result" in reply, reply
    text = "".join(block.get("text", "") for block in reply["result"]["content"])
    return bool(reply["result"].get("isError")), text


def test_mcp_a_fifo_transcript_is_an_error_and_the_server_keeps_serving(
    project: Path, world: dict[str, Path]
) -> None:
    server = Peer("mcp", "-C", str(project))
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        }
        assert "result" in server.call("initialize", init)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        failed, text = _mcp_tool(server, "memory_transcript", transcript_path=str(world["fifo"]))
        assert failed and "FIFO" in text and str(world["fifo"]) in text

        # Another project's conversation is not shown to an MCP caller...
        failed, text = _mcp_tool(server, "memory_transcript", transcript_path=str(world["other"]))
        assert failed and "not a known session transcript of this project" in text
        assert "secret" not in text
        # A NUL byte (JSON can carry one) is a plain one-line refusal, not a bug report.
        failed, text = _mcp_tool(
            server, "memory_transcript", transcript_path=str(world["anchored"]) + "\0x"
        )
        assert failed and "holds a NUL byte" in text and "internal error" not in text
        assert len(text.strip().splitlines()) == 2  # the error and its hint
        # ...the transcript this project's anchor names is.
        failed, text = _mcp_tool(
            server, "memory_transcript", transcript_path=str(world["anchored"]), turn="a0000001"
        )
        assert not failed and "Staging listens on 2222." in text

        failed, text = _mcp_tool(server, "memory_search", query="staging port")
        assert not failed and "staging port noted" in text
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr


def test_sidecar_a_fifo_transcript_is_an_error_and_the_sidecar_keeps_serving(
    project: Path, world: dict[str, Path]
) -> None:
    sidecar = Peer("sidecar", "-C", str(project))
    try:
        start = sidecar.call(
            "session_start",
            {
                "cwd": str(project),
                "session_id": "s-fifo",
                "transcript_path": str(world["fifo"]),  # the session's own "transcript"
                "host": "pi",
            },
        )
        assert "result" in start, start
        call = {"name": "memory_transcript", "arguments": {"transcript_path": str(world["fifo"])}}
        reply = sidecar.call("tool", call)
        assert "error" in reply and "FIFO" in json.dumps(reply["error"]), reply

        reply = sidecar.call("tool", {"name": "memory_write", "arguments": {"text": "still here"}})
        assert "result" in reply and "Saved to" in reply["result"]["text"], reply
        other = {"name": "memory_transcript", "arguments": {"transcript_path": str(world["other"])}}
        reply = sidecar.call("tool", other)
        assert "error" in reply and "not a known session transcript" in json.dumps(reply)
    finally:
        stderr = sidecar.close()
    assert "Traceback" not in stderr


def test_chunks_of_a_device_is_a_one_line_error(project: Path) -> None:
    done = run_memlane("chunks", "/dev/urandom", cwd=project, timeout=PROCESS_DEADLINE_S)
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert "/dev/urandom is a character device, not a regular file" in first
    assert "Traceback" not in done.stderr


def test_the_cli_transcript_of_a_fifo_is_a_one_line_error(
    project: Path, world: dict[str, Path]
) -> None:
    done = run_memlane("transcript", str(world["fifo"]), cwd=project, timeout=PROCESS_DEADLINE_S)
    assert done.returncode == 1 and "is a FIFO (named pipe)" in done.stderr.splitlines()[0]
