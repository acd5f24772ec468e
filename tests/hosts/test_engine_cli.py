"""``memlane search|write|…`` handed to a running engine (cli/fast.py → hosts/server/commands.py):
the same answers as in a process of its own, and the settings as they are now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import engine_pids, make_project

pytestmark = pytest.mark.subprocess

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


@pytest.fixture
def memlane() -> Path:
    script = Path(sys.executable).with_name("memlane")
    if not script.exists():
        pytest.skip(f"no memlane console script next to {sys.executable} (pip install -e .)")
    return script


def _run(
    script: Path, cwd: Path, *args: str, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(script), *args],
        cwd=cwd,
        env={**os.environ, **LEXICAL, **env},
        input=input,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _engine(script: Path, cwd: Path, isolated_home: Path) -> int:
    started = _run(script, cwd, "engine", "start")
    assert started.returncode == 0, started.stderr
    (pid,) = engine_pids(isolated_home)
    return pid


def test_a_running_engine_answers_as_a_process_of_its_own_would(
    memlane: Path, tmp_path: Path, isolated_home: Path
) -> None:
    project = make_project(tmp_path)
    inside = project / "src"
    inside.mkdir()
    for text in ("the billing cron runs at 02:00 UTC", "the retry queue backs off 5 times"):
        assert _run(memlane, project, "write", text, MEMLANE_ENGINE="off").returncode == 0
    pid = _engine(memlane, project, isolated_home)
    for where, argv in [
        (project, ["search", "billing cron"]),
        (inside, ["search", "retry queue"]),  # paths shown from where it ran
        (project, ["search", "--json", "-k", "1", "billing"]),
        (project, ["search", "--kind", "bogus", "x"]),  # an error: its message and status
        (project, ["search", "--jsn", "x"]),  # a usage error, from the full CLI
        (project, ["scope"]),
    ]:
        alone = _run(memlane, where, *argv, MEMLANE_ENGINE="off")
        served = _run(memlane, where, *argv)
        assert (served.returncode, served.stdout, served.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        ), argv
    written = _run(memlane, project, "write", "-", input="the vpn is needed for staging\n")
    assert written.returncode == 0, written.stderr
    found = _run(memlane, project, "search", "vpn staging", MEMLANE_ENGINE="off")
    assert "the vpn is needed for staging" in found.stdout
    assert engine_pids(isolated_home) == [pid]  # every call above went to that engine


def test_settings_changed_between_two_calls_apply_to_the_second(
    memlane: Path, tmp_path: Path, isolated_home: Path
) -> None:
    project = make_project(tmp_path)
    for n in range(4):
        assert (
            _run(memlane, project, "write", f"deploy note {n}", MEMLANE_ENGINE="off").returncode
            == 0
        )
    _engine(memlane, project, isolated_home)
    before = json.loads(_run(memlane, project, "search", "--json", "deploy note").stdout)
    assert len(before["hits"]) == 4
    (isolated_home / "config.toml").write_text("[search]\ntop_k = 2\n", encoding="utf-8")
    after = json.loads(_run(memlane, project, "search", "--json", "deploy note").stdout)
    assert len(after["hits"]) == 2
    (isolated_home / "config.toml").unlink()
    again = json.loads(_run(memlane, project, "search", "--json", "deploy note").stdout)
    assert len(again["hits"]) == 4
