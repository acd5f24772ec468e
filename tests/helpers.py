"""What many tests share, beside the fixtures of ``conftest.py``.

* ``NOW`` and ``FixedClock``: every test that lets a date or time decide
  something runs on an injected clock, never on today's date.
* ``make_project``: a fresh project directory (a git root).
* ``open_memory``: a ``Memory`` whose configuration comes from the
  environment given here, on a given clock.
* ``Cli``: the ``memlane`` command run in this process (typer's
  ``CliRunner`` isolation around ``memlane.cli.main.main``); a result has
  the ``returncode``/``stdout``/``stderr`` of a finished process.
* ``run_memlane``: the command as a real subprocess, for the few tests
  about what only a process shows (exit status, signals, cold start).
* ``wait_for``: poll a condition another thread makes true.
* ``IndexWriteLock``: another connection holding an index's write lock.
* ``isolate_environment``: a ``MEMLANE_HOME`` of its own and none of the
  user's memlane settings (conftest's autouse fixture; a module-scoped
  fixture, which runs before it, calls it too).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane.core.clock import FixedClock
from memlane.core.config import load_config
from memlane.core.scope import resolve_scope
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.llm.base import LLM

__all__ = [
    "MEMLANE",
    "NOW",
    "TOPIC_DAY",
    "Cli",
    "CliResult",
    "FixedClock",
    "IndexWriteLock",
    "isolate_environment",
    "make_project",
    "open_memory",
    "run_memlane",
    "wait_for",
]

# The moment the suite lives in: a Monday morning, UTC. Tests that need
# another day move their clock (``clock.set(...)``) instead of reading today.
NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
# The day store-level topic writes are stamped with (``updated:``) in tests.
TOPIC_DAY = NOW.date()

MEMLANE = [sys.executable, "-m", "memlane.cli.main"]

_DEFAULT_CTRL_C = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def with_ctrl_c(argv: list[str]) -> list[str]:
    """*argv* run with Ctrl-C's default disposition, as from a terminal (a
    suite started in the background ignores SIGINT, and a child inherits
    that). Reset in a fresh interpreter that then execs *argv* (same pid),
    never by ``preexec_fn``: Python code between fork and exec in a test
    process running gRPC's threads (the Milvus tests import it) can die
    there, and Popen then takes the dead child for a started one."""
    return [sys.executable, "-c", _DEFAULT_CTRL_C, *argv]


_REDIRECTING_ENV = (
    "MEMSEARCH_DIR",
    "MEMLANE_STORE_CMD",
    "PI_MEMSEARCH_STORE_CMD",
    "MEMLANE_SESSION_ID",
    "MEMLANE_TRANSCRIPT",
)


def isolate_environment(monkeypatch: pytest.MonkeyPatch, home: Path, cache: Path) -> None:
    """Point memlane at *home* and drop the user's memlane settings from the environment."""
    monkeypatch.setenv("MEMLANE_HOME", str(home))
    for name in _REDIRECTING_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("MEMLANE_") and name != "MEMLANE_HOME":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(cache))
    # The sessions layer reads agents' transcripts: never the real ~/.pi or ~/.claude.
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "pi-agent"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)


#: ``python -m`` name of the warm engine (core/link.py's ENGINE_MODULE).
ENGINE_MODULE = "memlane.hosts.server"


def engine_pids(home: Path | None = None, *, under: Path | None = None) -> list[int]:
    """The warm engines running for *home*, or for any home below *under* (this
    test run's temporary directory: other runs on the machine keep theirs).

    A child the engine is starting (a distiller command, say) carries the
    engine's command line from its fork until its exec, which on a loaded
    machine can be seen here: a process whose parent is one of the engines
    found is that child, not another engine."""
    found: dict[int, int] = {}  # pid -> parent pid
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            if ENGINE_MODULE.encode() not in cmdline:
                continue
            state, parent = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
            if state == "Z":
                continue
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            homes = [v[len(b"MEMLANE_HOME=") :] for v in environ if v.startswith(b"MEMLANE_HOME=")]
            if home is not None and homes != [str(home).encode()]:
                continue
            if under is not None and not (
                homes and homes[0].startswith(str(under).rstrip("/").encode() + b"/")
            ):
                continue
        except OSError:
            continue
        found[int(entry)] = int(parent)
    return [pid for pid, parent in found.items() if parent not in found]


def stop_engines(
    home: Path | None = None,
    wait_s: float = 20.0,
    *,
    only: set[int] | None = None,
    under: Path | None = None,
) -> None:
    """SIGTERM every engine of *home* (or those in *only*): they end their sessions;
    SIGKILL what is left after *wait_s*. No test leaves an engine behind."""
    import signal

    def mine() -> list[int]:
        pids = engine_pids(home, under=under)
        return [pid for pid in pids if only is None or pid in only]

    pids = mine()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while pids and time.monotonic() < deadline:
        time.sleep(0.05)
        pids = mine()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def make_project(parent: Path, name: str = "proj", *, git: bool = True) -> Path:
    """``parent/name`` as a project: a directory with a ``.git`` (its git root)."""
    root = (parent / name).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if git:
        (root / ".git").mkdir(exist_ok=True)
    return root


def open_memory(
    directory: Path,
    *,
    clock: FixedClock | None = None,
    lexical: bool = True,
    **env: str,
) -> Memory:
    """A Memory for *directory* configured by the process environment plus *env*.

    ``lexical`` (the default) switches the embedder off: most tests are about
    files and rules, not vectors, and skip the model load.
    """
    merged: dict[str, str] = {**os.environ, **env}
    if lexical:
        merged.setdefault("MEMLANE_EMBEDDING_PROVIDER", "none")
    elif "MEMLANE_EMBEDDING_PROVIDER" not in env:
        merged.pop("MEMLANE_EMBEDDING_PROVIDER", None)  # the default: the bundled model
    scope = resolve_scope(directory, env=merged)
    return Memory(
        scope, load_config(scope.repository_dir, env=merged), clock=clock or FixedClock(NOW)
    )


def start_session(mem: Memory, llm: LLM | None = None, **settings: object) -> Session:
    """The test session "sess-1" over *mem*, its settings overridden by *settings*."""
    return Session.start(
        mem,
        host="test",
        session_id="sess-1",
        transcript_path="/tmp/t/sess-1.jsonl",
        llm=llm,
        settings=replace(mem.config.session, **settings),  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class CliResult:
    """A finished ``memlane`` command: the shape of ``subprocess.CompletedProcess``."""

    returncode: int
    stdout: str
    stderr: str


class Cli:
    """Runs ``memlane ARGS`` in this process, on a given clock.

    Output, input and the environment are isolated per call (typer's
    ``CliRunner``); *cwd* is where the command starts (the process's working
    directory is restored after). Exceptions other than the expected ones
    ``main`` turns into an exit code propagate, so a bug shows its traceback.
    """

    def __init__(self, clock: FixedClock | None, cwd: Path | None = None) -> None:
        """*clock* None lets the command choose (``MEMLANE_NOW`` or the system clock)."""
        self.clock = clock
        self.cwd = cwd

    def __call__(
        self,
        *args: str,
        cwd: Path | str | None = None,
        env: Mapping[str, str | None] | None = None,
        input: str | bytes | None = None,
    ) -> CliResult:
        from typer.testing import CliRunner

        from memlane.cli.main import main

        where = cwd if cwd is not None else self.cwd
        before = os.getcwd()
        with CliRunner().isolation(input=input, env=dict(env or {})) as (out, err, _):
            try:
                if where is not None:
                    os.chdir(where)
                try:
                    code = main(list(args), clock=self.clock)
                except SystemExit as exc:  # a command that exits on its own
                    code = exc.code if isinstance(exc.code, int) else 1
            finally:
                os.chdir(before)
                sys.stdout.flush()  # the isolated streams buffer until flushed
                sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
        return CliResult(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def run_memlane(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``memlane ARGS`` as a new process (the system clock: assert nothing on dates)."""
    return subprocess.run(
        [*MEMLANE, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        check=False,
    )


def wait_for(predicate: Callable[[], object], timeout: float = 15.0, what: str = "") -> None:
    """Poll *predicate* until it is true; fail the test after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    if predicate():
        return
    raise AssertionError(f"not reached within {timeout:g} s: {what or predicate!r}")


class IndexWriteLock:
    """Another process's hold on an index: a connection with its write lock.

    ``with IndexWriteLock(memory.internals.index_path):`` — a real lock, not a stub,
    so memlane's own code meets ``SQLITE_BUSY`` and takes its busy path.
    Pair it with a short ``memlane.index.sqlite.notes.BUSY_TIMEOUT_S``
    (monkeypatch) so that wait ends soon. ``release()`` lets go early (e.g.
    from a ``threading.Timer``); leaving the block always does.
    """

    def __init__(self, index_path: Path) -> None:
        import sqlite3

        self._connection = sqlite3.connect(index_path, timeout=0.1, check_same_thread=False)

    def __enter__(self) -> IndexWriteLock:
        self._connection.execute("BEGIN IMMEDIATE")
        return self

    def release(self) -> None:
        if self._connection.in_transaction:
            self._connection.rollback()

    def __exit__(self, *exc_info: object) -> None:
        self.release()
        self._connection.close()


def embedded_chunks(project: Path, text: str) -> int:
    """How many chunks holding *text* the project's SQLite notes index has embedded.

    Read from the index itself: ``.index-state.json`` describes only the last
    run, and whichever run (a session's catch-up, the debounced one) met a
    write first embedded it.
    """
    state = json.loads((project / ".memsearch" / ".index-state.json").read_text())
    database = str(state["milvus_uri"]).removeprefix("sqlite://")
    with contextlib.closing(sqlite3.connect(database)) as index:
        row = index.execute(
            "SELECT count(*) FROM chunks WHERE instr(content, ?) > 0 AND vector IS NOT NULL",
            (text,),
        ).fetchone()
    return int(row[0])
