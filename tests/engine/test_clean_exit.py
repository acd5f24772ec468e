"""A program using the Python API (docs/python-api.md) exits with status 0 and
prints nothing of its own.

A session starts the bundled model's load, its warm-up search and its
catch-up index on daemon threads. A program that ends while one of them is
inside onnxruntime (or a Milvus Lite call) used to abort at interpreter exit
("terminate called without an active exception", status 134), after
``shutdown()`` had answered that everything was flushed: in 10 of 12 runs of
a script ending right after its session, in nearly every run of one that
never shut its session down. core/native.py's gate makes the exit wait for
such a call and keeps daemon threads from starting another.

Each program runs as a real process, several times (the abort depended on
where the model load was when the program ended), with the real bundled
model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import make_project

pytestmark = pytest.mark.subprocess

RUNS = 3
TIMEOUT_S = 180

#: docs/python-api.md's two examples, as a program runs them.
PROGRAMS = {
    "memory, as documented": """
from memlane import Memory

with Memory.open(PROJECT) as memory:
    memory.write("the flaky login test was a race in the token refresh")
    result = memory.search("why was the login test flaky", k=3)
    section = memory.expand(result.hits[0].chunk_hash)
    print("token refresh" in section.content)
""",
    "session, as documented": """
from memlane import Exchange, Memory, Session

memory = Memory.open(PROJECT)
session = Session.open(memory, host="my-agent", session_id="3f2c9b1e")
injection = session.before_agent_start("why is the login test flaky?")
session.agent_settled(
    Exchange(user="why is the login test flaky?", assistant="a race in the token refresh",
             entry_id="ab12cd34")
)
print(session.shutdown().flushed)
""",
    # The model is still loading when the program ends: the case that aborted.
    "session shut down at once": """
from memlane import Memory, Session

session = Session.open(Memory.open(PROJECT), host="my-agent", session_id="3f2c9b1e")
print(session.shutdown().flushed)
""",
    "session never shut down": """
from memlane import Memory, Session

session = Session.open(Memory.open(PROJECT), host="my-agent", session_id="3f2c9b1e")
print(session.before_agent_start("why is the login test flaky?").system_append != "")
""",
}


def _run(
    program: str, project: Path, tmp_path: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "program.py"
    script.write_text(f"PROJECT = {str(project)!r}\n{program}", encoding="utf-8")
    environment = {**os.environ, **env}
    environment.pop("MEMLANE_EMBEDDING_PROVIDER", None)  # the bundled model, for real
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=TIMEOUT_S,
        check=False,
    )


def _assert_clean(done: subprocess.CompletedProcess[str], what: str, run: int) -> None:
    assert (done.returncode, done.stderr) == (0, ""), (
        f"{what}, run {run + 1}: status {done.returncode}\n{done.stderr}"
    )
    assert done.stdout.strip() == "True", f"{what}, run {run + 1}: {done.stdout!r}"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one entry: a session's catch-up index and warm-up have work."""
    project = make_project(tmp_path_factory.mktemp("exit"))
    done = _run(PROGRAMS["memory, as documented"], project, project.parent)
    _assert_clean(done, "memory, as documented", 0)
    return project


@pytest.mark.parametrize("what", [name for name in PROGRAMS if name.startswith("session")])
def test_a_program_using_the_api_exits_0_with_nothing_on_stderr(
    what: str, written: Path, tmp_path: Path
) -> None:
    for run in range(RUNS):
        done = _run(PROGRAMS[what], written, tmp_path)
        _assert_clean(done, what, run)


def test_a_program_on_milvus_lite_exits_0_with_nothing_on_stderr(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    project = make_project(tmp_path)
    lite = {"MEMLANE_INDEX_BACKEND": "milvus", "MEMLANE_INDEX_URI": str(tmp_path / "milvus.db")}
    done = _run(PROGRAMS["memory, as documented"], project, tmp_path, **lite)
    _assert_clean(done, "memory, as documented", 0)
    for run in range(RUNS):
        done = _run(PROGRAMS["session never shut down"], project, tmp_path, **lite)
        _assert_clean(done, "a session on Milvus Lite never shut down", run)
