"""``memlane sidecar`` as pi starts it: a relay to the warm engine, real processes throughout.

The relay imports neither the command-line framework nor the engine (pi
starts one per session, before its session starts) and starts no engine for
a pi that went away without a word; when no engine can be reached, what it
read is served in-process; the engine answers ``session_shutdown`` once the
session no longer needs its host, finishes the index on its own, and does
not exit on idle before it is done. The embedding endpoint is a fake server
on 127.0.0.1 that holds every request until the test opens it: an index
that cannot finish until then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sidecar import READ_TIMEOUT_S, Client

from fake_llm import FakeOpenAI
from helpers import embedded_chunks, engine_pids, stop_engines, wait_for

pytestmark = pytest.mark.subprocess

#: How long the held index may take once the test lets it go (a loaded machine).
INDEX_WAIT_S = 120.0
#: The ``memlane`` console script, by module (what pi runs).
FAST = [sys.executable, "-m", "memlane.cli.fast"]


class Relay(Client):
    """``memlane sidecar -C project``, spoken to as pi does."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*FAST, "sidecar", "-C", str(project)],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdin, self.proc.stdout.fileno())

    def finish(self) -> int:
        self.close_input()
        try:
            return self.proc.wait(READ_TIMEOUT_S)
        finally:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def engine_home(isolated_home: Path) -> Iterator[Path]:
    yield isolated_home
    stop_engines(isolated_home)


def _log(home: Path) -> str:
    return "".join(log.read_text() for log in (home / "engine").glob("*.log"))


def test_the_relay_imports_neither_the_cli_framework_nor_the_engine(
    engine_home: Path, project: Path
) -> None:
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"}
    relay = subprocess.run(
        [sys.executable, "-X", "importtime", *FAST[1:], "sidecar", "-C", str(project)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,  # a pi that goes away before its session starts
        capture_output=True,
        text=True,
        timeout=READ_TIMEOUT_S * 4,
        check=False,
    )
    assert relay.returncode == 0, relay.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in relay.stderr.splitlines()}
    assert "memlane.hosts.pi.bridge" in imported, "the relay did not run"
    assert not {name for name in imported if name.split(".")[0] in ("typer", "click", "rich")}
    assert not {
        name for name in imported if name.startswith(("memlane.engine", "memlane.cli.main"))
    }
    assert engine_pids(engine_home) == [], "an engine was started for a pi that said nothing"


def test_with_no_engine_to_reach_the_relay_serves_what_pi_sent_in_process(
    engine_home: Path, project: Path
) -> None:
    # An engine directory another user could write to: no engine is used there, so
    # the relay, which already read pi's first request, serves it in-process.
    shared = engine_home / "engine"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none"}
    relay = Relay(project, env)
    try:
        started = relay.result(
            "session_start",
            {"cwd": str(project), "session_id": "s-1", "transcript_path": None, "host": "pi"},
        )
        assert "memory_search" in started["snapshot"]
        wrote = relay.result(
            "tool", {"name": "memory_write", "arguments": {"text": "the queue is RabbitMQ"}}
        )
        assert "Saved to" in wrote["text"]
        assert relay.result("session_shutdown", {})["flushed"] is True
    finally:
        assert relay.finish() == 0
    assert engine_pids(engine_home) == []


def test_shutdown_answers_before_the_index_settles_and_the_engine_stays_to_finish_it(
    engine_home: Path, project: Path
) -> None:
    with FakeOpenAI() as embedder:
        embedder.embeddings_open.clear()
        env = {
            **os.environ,
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_BASE_URL": embedder.base_url,
            "MEMLANE_EMBEDDING_MODEL": "fake-embedder",
            "MEMLANE_EMBEDDING_TIMEOUT_S": str(INDEX_WAIT_S * 2),
            "MEMLANE_SESSIONS_ENABLED": "off",
            "MEMLANE_ENGINE_IDLE_S": "1",
            # An answer that waited for the index would come after the test gave up.
            "MEMLANE_SESSION_SHUTDOWN_CAP_MS": "600000",
        }
        relay = Relay(project, env)
        try:
            relay.result(
                "session_start",
                {"cwd": str(project), "session_id": "s-1", "transcript_path": None, "host": "pi"},
            )
            wrote = relay.result(
                "tool", {"name": "memory_write", "arguments": {"text": "the mailer uses SQS"}}
            )
            assert "Saved to" in wrote["text"]
            assert relay.result("session_shutdown", {}) == {"flushed": True, "pending": 0}
        finally:
            assert relay.finish() == 0
        # Past its idle time, the engine stays for the index it has not finished.
        wait_for(lambda: "work is under way" in _log(engine_home), 60, "the engine staying")
        assert engine_pids(engine_home)
        embedder.embeddings_open.set()
        wait_for(
            lambda: not engine_pids(engine_home), INDEX_WAIT_S, "the idle exit after the index"
        )
    state = json.loads((project / ".memsearch" / ".index-state.json").read_text())
    assert state["status"] == "ok"
    assert embedded_chunks(project, "the mailer uses SQS") == 1
    assert "Traceback" not in _log(engine_home)
