"""A real ``memlane sidecar`` killed with queued captures loses none (issue 14, item 2).

Each test runs the real command as a subprocess (a host talking JSON-RPC over
its pipes: ``Client`` from test_sidecar.py), distilling through memlane's
OpenAI provider and a fake model on 127.0.0.1 that the test holds or
releases. Dates come from the system clock here: the tests read whatever
daily file the sidecars wrote, never today's name.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_sidecar import READ_TIMEOUT_S, Client

from fake_llm import FakeOpenAI, Request
from helpers import wait_for
from memlane.core.faults import KILL_ENV
from memlane.core.scope import resolve_scope
from memlane.store.anchor import ANCHOR_RE

pytestmark = pytest.mark.subprocess

_QUESTION_RE = re.compile(r"question number (\d+)")


@pytest.fixture
def model() -> Iterator[tuple[FakeOpenAI, threading.Event]]:
    """A model that holds every distillation until the event is set, then
    answers one bullet naming the exchange's question number."""
    release = threading.Event()

    def answer(request: Request) -> str:
        release.wait(READ_TIMEOUT_S * 4)
        found = _QUESTION_RE.search(request.prompt)
        return f"- the agent answered question {found.group(1) if found else '?'}"

    with FakeOpenAI(responder=answer) as server:
        try:
            yield server, release
        finally:
            release.set()


class Sidecar:
    """``memlane sidecar`` as a process, with the host's side of its pipes."""

    def __init__(self, project: Path, server: FakeOpenAI, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlane.cli.main", "sidecar", "-C", str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={
                **os.environ,
                "MEMLANE_EMBEDDING_PROVIDER": "none",
                "MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50",
                "MEMLANE_LLM_PROVIDER": "openai",
                "MEMLANE_LLM_BASE_URL": server.base_url,
                "MEMLANE_LLM_MODEL": "fake-model",
                # Only distillation is under test: one model request per exchange.
                "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
                **env,
            },
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.host = Client(self.proc.stdin, self.proc.stdout.fileno())
        self.project = project

    def start(self, session_id: str) -> None:
        self.host.result(
            "session_start",
            {
                "cwd": str(self.project),
                "session_id": session_id,
                "transcript_path": f"/tmp/t/{session_id}.jsonl",
                "host": "pi",
            },
        )

    def settle(self, n: int, session_id: str) -> Any:
        exchange = {
            "user": f"question number {n}: where do the logs of service {n} go?",
            "assistant": f"Service {n} logs to /var/log/service-{n}.log.",
            "entry_id": f"t{n}",
            "session_id": session_id,
            "transcript_path": f"/tmp/t/{session_id}.jsonl",
        }
        return self.host.result("agent_settled", {"exchange": exchange})

    def capture_status(self) -> dict[str, Any]:
        status = self.host.result("tool", {"name": "memory_status", "arguments": {}})
        capture: dict[str, Any] = status["details"]["session"]["capture"]
        return capture

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(READ_TIMEOUT_S) == -signal.SIGKILL

    def stop(self) -> None:
        self.host.result("session_shutdown", {})
        self.host.close_input()
        assert self.proc.wait(READ_TIMEOUT_S) == 0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(READ_TIMEOUT_S)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


@contextmanager
def sidecar(project: Path, server: FakeOpenAI, **env: str) -> Iterator[Sidecar]:
    process = Sidecar(project, server, **env)
    try:
        yield process
    finally:
        process.close()


def _turns(project: Path, session_id: str) -> list[str]:
    """The turn of every entry anchored to *session_id*, over all daily files."""
    store = resolve_scope(project).store
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(store.glob("*.md")))
    return [m.group("turn") for m in ANCHOR_RE.finditer(text) if m.group("session") == session_id]


def _daily(project: Path) -> str:
    store = resolve_scope(project).store
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(store.glob("*.md")))


def test_twenty_queued_exchanges_survive_a_kill_9(
    project: Path, model: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, release = model
    expected = [f"t{n}" for n in range(20)]
    with sidecar(project, server) as first:
        first.start("s-killed")
        for n in range(20):
            assert first.settle(n, "s-killed") == {"queued": True}
        # The first distillation is held by the model; the other 19 wait behind it.
        wait_for(lambda: server.requests, READ_TIMEOUT_S, "the first distillation request")
        first.kill()
    assert _turns(project, "s-killed") == []  # nothing had reached the daily file
    release.set()
    with sidecar(project, server) as second:
        second.start("s-next")  # answers at once: recovery runs in the background
        wait_for(
            lambda: len(_turns(project, "s-killed")) == 20, READ_TIMEOUT_S * 2, "all 20 entries"
        )
        # Counted once each entry is flushed and marked done, just after it appears.
        wait_for(lambda: second.capture_status()["recovered"] == 20, READ_TIMEOUT_S, "20 recovered")
        assert second.capture_status()["recovered_as_digest"] == 0
        second.stop()
    assert sorted(_turns(project, "s-killed")) == sorted(expected)  # each exactly once
    text = _daily(project)
    for n in range(20):
        assert text.count(f"- the agent answered question {n}\n") == 1
    assert "transcript:/tmp/t/s-killed.jsonl" in text
    state_dir = resolve_scope(project).state_dir
    assert state_dir is not None and list(state_dir.glob(".capture-journal/*.jsonl")) == []


def test_a_kill_between_the_daily_write_and_the_done_mark_writes_no_duplicate(
    project: Path, model: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, release = model
    with sidecar(project, server, **{KILL_ENV: "capture.written@3"}) as first:
        first.start("s-killed")
        for n in range(5):
            assert first.settle(n, "s-killed") == {"queued": True}
        release.set()  # two entries are written and marked, the third written, then the kill
        assert first.proc.wait(READ_TIMEOUT_S) == -signal.SIGKILL
    assert sorted(_turns(project, "s-killed")) == ["t0", "t1", "t2"]
    with sidecar(project, server) as second:
        second.start("s-next")
        wait_for(lambda: len(_turns(project, "s-killed")) >= 5, READ_TIMEOUT_S, "t3 and t4")
        wait_for(lambda: second.capture_status()["recovered"] == 2, READ_TIMEOUT_S, "2 recovered")
        assert second.capture_status()["found_written"] == 1
        second.stop()
    assert sorted(_turns(project, "s-killed")) == ["t0", "t1", "t2", "t3", "t4"]


def test_a_live_sidecar_keeps_its_queue_until_it_is_killed(
    project: Path, model: tuple[FakeOpenAI, threading.Event]
) -> None:
    server, release = model
    with sidecar(project, server) as live, sidecar(project, server) as other:
        live.start("s-live")
        for n in range(3):
            assert live.settle(n, "s-live") == {"queued": True}
        other.start("s-other")
        wait_for(lambda: other.capture_status()["recovery_scanned"], READ_TIMEOUT_S, "the scan")
        assert other.capture_status()["recovered"] == 0  # s-live is alive: not taken
        assert _turns(project, "s-live") == []
        live.kill()
        release.set()
        # The next session start in the other sidecar takes the dead one's queue.
        other.start("s-other-2")
        wait_for(lambda: len(_turns(project, "s-live")) == 3, READ_TIMEOUT_S, "the three entries")
        # Counted once each entry is flushed and marked done, just after it appears.
        wait_for(
            lambda: other.capture_status()["recovered"] == 3, READ_TIMEOUT_S, "three recovered"
        )
        other.stop()
    assert sorted(_turns(project, "s-live")) == ["t0", "t1", "t2"]
