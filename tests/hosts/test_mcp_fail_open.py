"""``memlane mcp`` fails open: when the engine cannot be reached, the call is answered anyway.

Two ways an engine is missing, each made real here: one still starting
(another client holds the lock every starter takes, so none comes up within
the server's budget) and one that cannot start (another process holds the
engine's own lock, as a hung engine would: each one started gives up). A
search then answers from the words of the notes and says why, a write
still writes, and each such call is recorded where ``memlane status`` shows
it. When the engine comes up after all, the next call is its.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from test_mcp import INITIALIZED, Lines, initialize, request, server_env

from helpers import MEMLANE, Cli, FixedClock, wait_for
from memlane.core import link
from memlane.engine.sessions.registry import close_stores
from memlane.hosts.mcp.thin import Server

pytestmark = pytest.mark.subprocess

NOTE = "The release train leaves every Tuesday at noon."


class InProcess:
    """The server of ``memlane mcp`` in this process, on pipes, with a short budget."""

    def __init__(self, project: Path, clock: FixedClock, start_s: float) -> None:
        to_server, self._to_server = os.pipe()
        self._from_server, from_server = os.pipe()
        self._in: IO[bytes] = os.fdopen(to_server, "rb")
        self._out: IO[bytes] = os.fdopen(from_server, "wb")
        self.writer = os.fdopen(self._to_server, "wb")
        self.reader = os.fdopen(self._from_server, "rb")
        self.server = Server(str(project), self._out, clock=clock, start_s=start_s)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.server.serve(self._in)
            self.server.finish()
        finally:
            self._out.close()
            self._in.close()

    def send(self, *messages: dict[str, Any]) -> None:
        self.writer.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
        self.writer.flush()

    def read(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the server closed its output"
        message: dict[str, Any] = json.loads(line)
        return message

    def call(self, request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
        self.send(request(request_id, "tools/call", name=name, arguments=arguments))
        reply = self.read()
        assert reply["id"] == request_id, reply
        result: dict[str, Any] = reply["result"]
        return result

    def close(self) -> None:
        self.writer.close()
        self.thread.join(60)
        self.reader.close()
        close_stores()
        assert not self.thread.is_alive(), "the server did not finish"


@pytest.fixture
def held_lock() -> Iterator[Callable[[str], Callable[[], None]]]:
    """``release = held_lock(path)``: a lock file of the engine's directory held
    (``flock``) until ``release()`` or the end of the test."""
    held: list[int] = []

    def hold(path: str) -> Callable[[], None]:
        link.make_private_dir(os.path.dirname(path))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.append(fd)

        def release() -> None:
            held.remove(fd)
            os.close(fd)

        return release

    yield hold
    for fd in held:
        os.close(fd)


def failures() -> list[dict[str, Any]]:
    path = Path(link.Place().failures)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def test_while_the_engine_is_starting_a_search_matches_words_and_says_so(
    project: Path,
    clock: FixedClock,
    held_lock: Callable[[str], Callable[[], None]],
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    release = held_lock(link.Place().spawn_lock)  # another client is starting one
    server = InProcess(project, clock, start_s=1.0)
    try:
        server.send(initialize(), INITIALIZED)
        assert server.read()["id"] == 1

        wrote = server.call(2, "memory_write", text=NOTE)
        assert not wrote.get("isError") and text(wrote).startswith("Saved to "), wrote
        found = server.call(3, "memory_search", query="release train Tuesday")
        assert not found.get("isError"), found
        facts = found["structuredContent"]
        assert facts["mode"] == "lexical" and "Tuesday at noon" in facts["hits"][0]["content"]
        (notice,) = facts["notices"]
        assert "engine is still starting" in notice and "words only" in notice
        assert text(found).endswith(f"note: {notice}")
        # A search asked for words is not told it got less than it asked.
        exact = server.call(4, "memory_search", query="release train", mode="lexical")
        assert not exact["structuredContent"].get("notices"), exact
    finally:
        release()
        server.close()
    recorded = failures()
    assert [(f["client"], f["event"], f["what"]) for f in recorded] == [
        ("mcp", "memory_write", "slow"),
        ("mcp", "memory_search", "slow"),
        ("mcp", "memory_search", "slow"),
    ]
    status = cli("status")
    (row,) = [line for line in status.stdout.splitlines() if line.startswith("client failures")]
    assert "3 slow" in row and "mcp memory_search" in row, row


def test_an_engine_that_cannot_start_is_named_and_the_next_one_is_used(
    project: Path, held_lock: Callable[[str], Callable[[], None]]
) -> None:
    env = server_env()
    place = link.Place(key=link.engine_key(env))
    release = held_lock(place.lock)  # a hung engine: each one started gives up
    server = Lines(project, env)
    try:
        server.send(initialize(), INITIALIZED)
        assert server.read()["id"] == 1
        server.send(request(2, "tools/call", name="memory_write", arguments={"text": NOTE}))
        wrote = server.read()["result"]
        assert not wrote.get("isError") and text(wrote).startswith("Saved to "), wrote
        server.send(request(3, "tools/call", name="memory_search", arguments={"query": "train"}))
        found = server.read()["result"]
        (notice,) = found["structuredContent"]["notices"]
        assert "engine is unavailable (the engine exited at start" in notice, notice
        assert "memlane status" in notice
        assert "Tuesday at noon" in found["structuredContent"]["hits"][0]["content"]

        # The hung engine is gone: the next engine started serves the calls.
        release()
        started = subprocess.run(
            [*MEMLANE, "engine", "start"], env=env, capture_output=True, text=True, timeout=120
        )
        assert started.returncode == 0, started.stderr
        wait_for(Path(place.info).exists, 60, "the engine")
        server.send(request(4, "tools/call", name="memory_search", arguments={"query": "train"}))
        again = server.read()["result"]
        assert "notices" not in again["structuredContent"], again
        assert "Tuesday at noon" in again["structuredContent"]["hits"][0]["content"]
    finally:
        server.stop()
    assert [(f["client"], f["event"], f["what"]) for f in failures()] == [
        ("mcp", "memory_write", "failed"),
        ("mcp", "memory_search", "failed"),
    ]
