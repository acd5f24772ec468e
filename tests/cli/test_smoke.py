"""Smoke tests: what only a real ``memlane`` process shows.

The console script starting, exit statuses, stdin from a pipe, Ctrl-C, a
reader that goes away, several processes writing at once, and the demo as
``make demo`` runs it. Everything else about the command runs in-process
(``helpers.Cli``). These processes run on the system clock: nothing here
asserts a date or a time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llm import closed_port_url
from helpers import MEMLANE, FixedClock, open_memory, run_memlane, wait_for, with_ctrl_c
from memlane.cli.demo import fixtures_dir

pytestmark = pytest.mark.subprocess

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


@pytest.fixture
def console_script() -> Path:
    """The installed ``memlane`` entry point next to this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("memlane")
    if not script.exists():
        pytest.skip(f"no memlane console script next to {sys.executable} (pip install -e .)")
    return script


def _console(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(script), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_console_script_starts(console_script: Path) -> None:
    from memlane import __version__

    version = _console(console_script, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"memlane {__version__}\n"
    helped = _console(console_script, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Usage: memlane" in helped.stdout and "search" in helped.stdout
    assert helped.stderr == ""


def test_an_unknown_option_exits_2_with_one_error_line(project: Path) -> None:
    out = run_memlane("-C", str(project), "search", "--no-such-option", "x")
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if "rror" in line]
    assert errors == ["Error: No such option: --no-such-option"], out.stderr
    assert out.stdout == ""


def test_expected_errors_exit_1_with_one_line_and_no_traceback(
    project: Path, tmp_path: Path
) -> None:
    no_store = run_memlane("search", "anything", cwd=project, env=LEXICAL)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    no_home = run_memlane(
        "status", "--no-probe", cwd=project, env={"MEMLANE_HOME": str(blocker / "home")}
    )
    for out, message in ((no_store, "no memory store at"), (no_home, "a-file/home")):
        assert out.returncode == 1, out
        first, *hint = out.stderr.splitlines()
        assert first.startswith("memlane: error: ") and message in first, out.stderr
        assert len(hint) <= 1 and "Traceback" not in out.stderr
        assert out.stdout == ""


def test_write_reads_what_is_piped_in(project: Path) -> None:
    out = run_memlane("write", "-", cwd=project, env=LEXICAL, input="first line\n- second line\n")
    assert out.returncode == 0, out.stderr
    daily = list((project / ".memsearch" / "memory").glob("*.md"))
    assert len(daily) == 1, daily
    assert "- first line\n- second line\n" in daily[0].read_text(encoding="utf-8")


def test_piped_input_that_is_not_utf8_is_refused(project: Path) -> None:
    out = subprocess.run(
        [*MEMLANE, "write", "-"],
        cwd=project,
        env={**os.environ, **LEXICAL},
        input=b"bad \xff bytes\n",
        capture_output=True,
        timeout=120,
        check=False,
    )
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 1, err
    assert err.startswith("memlane: error: ") and "not valid UTF-8" in err
    assert "Traceback" not in err
    assert not list(project.glob(".memsearch/memory/*.md"))


def test_ctrl_c_exits_130_saying_interrupted(project: Path, tmp_path: Path) -> None:
    """SIGINT while memlane waits on a hanging store command, which it then stops."""
    asked = tmp_path / "asked"
    store_cmd = tmp_path / "hanging-store-cmd"
    store_cmd.write_text(
        f"#!/bin/sh\necho $$ > {asked}.tmp && mv {asked}.tmp {asked}\nexec sleep 120\n"
    )
    store_cmd.chmod(0o755)
    proc = subprocess.Popen(
        with_ctrl_c([*MEMLANE, "-C", str(project), "scope"]),
        env={**os.environ, "MEMLANE_STORE_CMD": str(store_cmd)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(asked.exists, timeout=60, what="memlane runs the store command")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert err == "memlane: interrupted\n"
        assert out == ""
        hanging = int(asked.read_text())
        wait_for(lambda: not _alive(hanging), timeout=30, what="the store command is stopped")
    finally:
        proc.kill()
        proc.wait()
        if asked.exists() and _alive(hanging := int(asked.read_text())):
            os.kill(hanging, signal.SIGKILL)  # the test failed: do not leave it behind


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def closed_stdout() -> Iterator[int]:
    """A pipe's write end whose reader is already gone (`memlane ... | head -0`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    yield write_end
    os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("scope", "--json"),
        ("chunks", str(fixtures_dir() / "memory" / "2026-10-27.md"), "--json"),
    ],
)
def test_a_reader_that_went_away_ends_the_command_quietly(
    project: Path, closed_stdout: int, args: tuple[str, ...]
) -> None:
    """No traceback, no "Exception ignored" at exit; status 1 (the output was cut short)."""
    # A user's stdout is block-buffered: a short output meets the closed pipe
    # only when it is flushed, at the end.
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run(
        [*MEMLANE, *args],
        cwd=project,
        env={**buffered, **LEXICAL},
        stdout=closed_stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    assert out.stderr == ""


def test_concurrent_writers_and_indexers_lose_nothing(project: Path, clock: FixedClock) -> None:
    script = (
        "import sys\n"
        "from memlane.engine.project import Memory\n"
        "tag = sys.argv[1]\n"
        "with Memory.open(sys.argv[2]) as mem:\n"
        "    for i in range(15):\n"
        "        mem.write(f'writer {tag} note number {i} token{tag}x{i}')\n"
        "        if i % 5 == 4:\n"
        "            mem.sync()\n"
        "            mem.search(f'token{tag}x{i}')\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(n), str(project)],
            env={**os.environ, **LEXICAL},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    with open_memory(project, clock=clock) as mem:
        mem.sync()
        for n in range(4):
            for i in range(15):
                hits = mem.search(f"token{n}x{i}", 3).hits
                assert hits and f"token{n}x{i}" in hits[0].content, (n, i)
        text = "".join(p.read_text() for p in mem.scope.store.glob("*.md"))
        assert text.count("### ") == 60


def test_the_demo_runs_offline_as_make_demo_runs_it(console_script: Path, tmp_path: Path) -> None:
    dead = closed_port_url("")
    out = _console(
        console_script,
        "demo",
        MEMLANE_HOME=str(tmp_path / "untouched"),
        # Any HTTP request would go to a port where nothing listens.
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        ALL_PROXY=dead,
        NO_PROXY="",
    )
    assert out.returncode == 0, out.stderr
    for marker in ("1. A project", "2. Index it", "3. L1 recall", "4. L2 recall", "Session:"):
        assert marker in out.stdout
    assert "hybrid search" in out.stdout
    assert "Traceback" not in out.stderr
    # The demo uses its own throwaway home, never the user's.
    assert not (tmp_path / "untouched").exists()
