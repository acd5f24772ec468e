"""Every memlane process ends cleanly: status 0, no traceback, no abort.

The warm engine exits on ``memlane engine stop``, on SIGTERM and when idle,
each time with a pi session's model load, warm-up and catch-up index started
a moment before on its daemon threads (the moment an exit used to abort in,
"terminate called without an active exception"); the relay pi starts
(``memlane sidecar``), the CLI (served by the engine or in its own process)
and ``memlane mcp`` exit 0 with nothing on stderr.

Every process is real, with the bundled model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import wait_for
from memlane.core import link

pytestmark = pytest.mark.subprocess

SCRIPT = Path(sys.executable).with_name("memlane")
TIMEOUT_S = 120
#: What a clean log never holds.
BAD = ("Traceback", "terminate called", "ERROR", "CRITICAL")


@pytest.fixture(autouse=True)
def _idle_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keyed like every MEMLANE_ variable: the engine and its clients share it.
    monkeypatch.setenv("MEMLANE_ENGINE_IDLE_S", "3")


def memlane(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


class Engine:
    """``python -m memlane.hosts.server`` run by the test, so its status can be read."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.place = link.Place()
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlane.hosts.server"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        wait_for(lambda: Path(self.place.info).exists(), TIMEOUT_S, "the engine's info file")

    def wait(self) -> tuple[int, str]:
        code = self.proc.wait(TIMEOUT_S)
        self._log_file.close()
        return code, self.log.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log_file.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    started = Engine(tmp_path / "engine.log")
    try:
        yield started
    finally:
        started.close()


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _request(proc: subprocess.Popen[bytes], request_id: int, method: str, params: object) -> Any:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        _line({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    )
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert "result" in answer, answer
    return answer["result"]


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Close the client's input (its host went away): its status and stderr."""
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    try:
        code = proc.wait(TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode(errors="replace")
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code, stderr


def _pi_session(project: Path, **env: str) -> subprocess.Popen[bytes]:
    """``memlane sidecar`` as pi starts it, its session started and one prompt asked."""
    relay = subprocess.Popen(
        [str(SCRIPT), "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    start = {"cwd": str(project), "session_id": "pi-1", "host": "pi"}
    assert "snapshot" in _request(relay, 1, "session_start", start)
    _request(relay, 2, "before_agent_start", {"prompt": "how do we deploy?"})
    return relay


def _assert_clean_log(code: int, log: str, how: str) -> None:
    assert code == 0, f"the engine ended by {how} with status {code}:\n{log}"
    assert not [line for line in log.splitlines() if any(bad in line for bad in BAD)], log
    assert log.rstrip().endswith("exited"), log


@pytest.fixture
def written(project: Path) -> Path:
    """A project with an entry: a session's catch-up index embeds at start."""
    done = memlane(
        "write", "we deploy with blue-green on Fridays", cwd=project, MEMLANE_ENGINE="off"
    )
    assert done.returncode == 0, done.stderr
    return project


@pytest.mark.parametrize("how", ["engine stop", "SIGTERM"])
def test_the_engine_asked_to_stop_mid_start_of_a_session_exits_cleanly(
    how: str, engine: Engine, written: Path
) -> None:
    relay = _pi_session(written)
    try:
        if how == "engine stop":
            # Its own wait may end before the engine's (the sessions' shutdown cap
            # on a busy machine): what matters is how the engine ends.
            stopped = memlane("engine", "stop", cwd=written)
            assert "Traceback" not in stopped.stderr, stopped.stderr
        else:
            engine.proc.send_signal(signal.SIGTERM)
        code, log = engine.wait()
        _assert_clean_log(code, log, how)
    finally:
        relay_code, relay_err = _finish(relay)
    # The engine hung up on the relay: it ends as when pi closes it.
    assert (relay_code, relay_err) == (0, "")


def test_the_engine_exits_cleanly_when_idle_after_a_session(engine: Engine, written: Path) -> None:
    relay = _pi_session(written)
    assert _finish(relay) == (0, "")
    code, log = engine.wait()
    _assert_clean_log(code, log, "its idle time")
    assert "idle for" in log


def test_cli_commands_exit_cleanly_served_by_the_engine_or_alone(
    engine: Engine, written: Path
) -> None:
    for env in ({}, {"MEMLANE_ENGINE": "off"}):
        searched = memlane("search", "deploy", cwd=written, **env)
        assert (searched.returncode, searched.stderr) == (0, ""), (env, searched.stderr)
        assert "blue-green" in searched.stdout
    stopped = memlane("engine", "stop", cwd=written)
    assert (stopped.returncode, stopped.stderr) == (0, "")
    _assert_clean_log(*engine.wait(), "engine stop")


def test_the_sidecar_serving_pi_itself_exits_cleanly(written: Path) -> None:
    relay = _pi_session(written, MEMLANE_ENGINE="off")
    assert _finish(relay) == (0, "")


def test_memlane_mcp_exits_cleanly_when_its_client_goes_away(written: Path) -> None:
    server = subprocess.Popen(
        [str(SCRIPT), "mcp", "-C", str(written)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    assert "serverInfo" in _request(server, 1, "initialize", hello)
    assert server.stdin is not None
    server.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    search = {"name": "memory_search", "arguments": {"query": "how do we deploy"}}
    _request(server, 2, "tools/call", search)
    assert _finish(server) == (0, "")
