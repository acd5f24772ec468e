"""The warm engine as a user meets it: ``memlane`` commands served by it, one engine per
setting of memlane's variables, ``memlane engine status|start|stop``, the pi relay.

Every process here is real: the ``memlane`` console script (cli/fast.py), the
engine it reaches (``python -m memlane.hosts.server``), the relay pi starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import engine_pids, run_memlane, wait_for
from memlane.core import link

pytestmark = pytest.mark.subprocess

#: The console script users run: its entry is cli/fast.py, which may hand the
#: command to the engine (``python -m memlane.cli.main`` always runs in-process).
SCRIPT = Path(sys.executable).with_name("memlane")


@pytest.fixture(autouse=True)
def _lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("MEMLANE_SESSIONS_ENABLED", "off")


def memlane(
    *args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        input=input,
        timeout=120,
        check=False,
    )


def status(cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = memlane("engine", "status", "--json", "--all", cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def calls(cwd: Path) -> int:
    (engine,) = status(cwd)["engines"]
    return int(engine["calls"])


def test_commands_go_through_a_running_engine_and_print_what_the_cli_prints(
    project: Path,
) -> None:
    started = memlane("engine", "start", cwd=project)
    assert started.returncode == 0, started.stderr
    assert "is running" in started.stdout
    wrote = memlane("write", "the billing service moved to Postgres 16", cwd=project)
    assert wrote.returncode == 0 and "Wrote an entry" in wrote.stdout, wrote.stderr
    before = calls(project)
    served = memlane("search", "postgres", "--json", cwd=project)
    assert served.returncode == 0, served.stderr
    assert calls(project) == before + 2  # the search, and this status call
    alone = run_memlane("search", "postgres", "--json", cwd=project)  # the CLI in-process
    assert json.loads(served.stdout)["hits"] == json.loads(alone.stdout)["hits"]
    assert json.loads(served.stdout)["hits"][0]["content"].endswith("Postgres 16")


def test_standard_input_reaches_a_command_the_engine_runs(project: Path) -> None:
    memlane("engine", "start", cwd=project)
    before = calls(project)
    piped = memlane("write", "-", cwd=project, input="the deploy needs the VPN\n")
    assert piped.returncode == 0, piped.stderr
    assert calls(project) == before + 2  # the write, and this status call
    store = project / ".memsearch" / "memory"
    assert "the deploy needs the VPN" in "".join(p.read_text() for p in store.glob("*.md"))


def test_a_failure_in_the_engine_reads_as_the_cli_says_it(project: Path, tmp_path: Path) -> None:
    memlane("engine", "start", cwd=project)
    served = memlane("expand", "0000000000000000", cwd=project)
    alone = run_memlane("expand", "0000000000000000", cwd=project)
    assert served.returncode == alone.returncode != 0
    assert served.stderr == alone.stderr and "memlane: error:" in served.stderr


def test_a_relative_path_argument_is_read_here_not_in_the_engine(project: Path) -> None:
    memlane("engine", "start", cwd=project)
    (project / "notes.jsonl").write_text("{}\n")
    before = calls(project)
    memlane("transcript", "notes.jsonl", cwd=project)
    assert calls(project) == before + 1  # the status call itself, nothing else


def test_a_one_off_command_starts_no_engine_unless_configured(
    project: Path, isolated_home: Path
) -> None:
    assert memlane("write", "a first memory", cwd=project).returncode == 0
    assert memlane("search", "anything", cwd=project).returncode == 0
    assert engine_pids(isolated_home) == []
    (isolated_home / "config.toml").write_text("[engine]\ncli_starts = true\n")
    assert memlane("search", "anything", cwd=project).returncode == 0
    assert len(engine_pids(isolated_home)) == 1


def test_other_settings_get_their_own_engine_and_stop_all_stops_every_one(
    project: Path, isolated_home: Path
) -> None:
    memlane("engine", "start", cwd=project)
    other = {"MEMLANE_AUTO_CONTEXT": "off"}
    memlane("engine", "start", cwd=project, env=other)
    engines = status(project)["engines"]
    assert len(engines) == 2 and len({e["key"] for e in engines}) == 2
    assert len(engine_pids(isolated_home)) == 2
    mine = memlane("engine", "status", cwd=project, env=other)
    assert "(this environment's)" in mine.stdout
    stopped = memlane("engine", "stop", "--all", cwd=project)
    assert stopped.returncode == 0 and stopped.stdout.count("stopped") == 2, stopped.stdout
    assert engine_pids(isolated_home) == []
    assert "no engine is running" in memlane("engine", "status", cwd=project).stdout


def test_memlane_status_names_the_engine(project: Path) -> None:
    assert "not running" in run_memlane("status", "--no-probe", cwd=project).stdout
    memlane("engine", "start", cwd=project)
    text = memlane("status", "--no-probe", cwd=project).stdout
    line = next(line for line in text.splitlines() if line.strip().startswith("engine"))
    assert "running (pid" in line


def test_engine_off_keeps_every_command_in_its_own_process(
    project: Path, isolated_home: Path
) -> None:
    off = {"MEMLANE_ENGINE": "off"}
    refused = memlane("engine", "start", cwd=project, env=off)
    assert refused.returncode != 0
    assert "MEMLANE_ENGINE=off" in refused.stderr and "Traceback" not in refused.stderr
    assert memlane("write", "still written", cwd=project, env=off).returncode == 0
    assert engine_pids(isolated_home) == []
    assert (
        "off (MEMLANE_ENGINE=off)"
        in run_memlane("status", "--no-probe", cwd=project, env=off).stdout
    )


def _request(
    proc: subprocess.Popen[bytes], request_id: int, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    proc.stdin.write(json.dumps(line).encode() + b"\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def test_pi_reaches_the_engine_through_the_relay_and_a_killed_engine_ends_it_cleanly(
    project: Path, isolated_home: Path
) -> None:
    relay = subprocess.Popen(
        [str(SCRIPT), "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        started = _request(
            relay, 1, "session_start", {"cwd": str(project), "session_id": "pi-1", "host": "pi"}
        )
        assert "snapshot" in started["result"], started
        (engine,) = status(project)["engines"]
        assert engine["connections"].get("pi") == 1
        assert [s["id"] for p in engine["projects"] for s in p["sessions"]] == ["pi-1"]
        (pid,) = engine_pids(isolated_home)
        os.kill(pid, signal.SIGKILL)
        assert relay.wait(30) == 0  # the engine hung up: the relay ends, pi starts another
        assert relay.stderr is not None and relay.stderr.read() == b""
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()


def test_a_relay_that_cannot_reach_an_engine_serves_pi_itself(project: Path) -> None:
    relay = subprocess.Popen(
        [str(SCRIPT), "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "MEMLANE_ENGINE": "off"},
    )
    try:
        started = _request(
            relay, 1, "session_start", {"cwd": str(project), "session_id": "pi-2", "host": "pi"}
        )
        assert "snapshot" in started["result"], started
        assert relay.stdin is not None
        relay.stdin.close()
        assert relay.wait(60) == 0
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()


def test_the_engine_socket_lives_in_the_private_engine_directory(
    project: Path, isolated_home: Path
) -> None:
    memlane("engine", "start", cwd=project)
    place = link.Place(str(isolated_home), link.engine_key(dict(os.environ)))
    directory = Path(place.directory)
    assert directory.stat().st_mode & 0o777 == 0o700
    path = place.socket_path()
    assert path is not None and Path(path).is_socket()
    assert Path(path).stat().st_mode & 0o777 == 0o600
    wait_for(lambda: Path(place.info).exists(), what="the engine's info file")
    info = json.loads(Path(place.info).read_text())
    assert info["socket"] == path and info["pid"] in engine_pids(isolated_home)
    assert "MEMLANE_EMBEDDING_PROVIDER" in info["variables"]  # names only, never values
    assert "none" not in json.dumps(info["variables"])
