"""pi in two git worktrees of one repository, end to end (ADR 0035).

The real pi with the memlane package, against the scripted fake model: a
session in a linked worktree is captured into the main worktree's store, and
the next session, started in the main checkout, has it in its stable
snapshot (the system prompt the model receives); then memory_search run by
the model from a second linked worktree finds it too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_harness import PiInstall, PiWorld

from fake_llm import FakeModel, Reply, Request
from git_worktrees import add_worktree, git
from helpers import NOW, wait_for

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")
PROMPT = "Which region hosts the staging cluster?"
ANSWER = "The staging cluster runs in eu-west-3, next to the Paris office."
BULLET = "the staging cluster runs in eu-west-3"


def _distil(request: Request) -> str:
    prompt = "\n".join(request.texts("user"))
    return f"- {BULLET}" if "staging cluster" in prompt else "- the user asked something else"


@pytest.fixture(scope="module")
def world(
    pi_install: PiInstall,
    fake_model: FakeModel,
    tmp_path_factory: pytest.TempPathFactory,
    shared_cache: Path,
) -> Iterator[PiWorld]:
    root = tmp_path_factory.mktemp("pi-worktrees")
    fake_model.distill = _distil
    w = PiWorld(
        pi_install,
        root,
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(root / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
            "MEMLANE_EMBEDDING_PROVIDER": "none",
        },
    )
    w.install_package(MEMLANE)
    git(w.project, "init", "-q", "-b", "main")
    git(w.project, "commit", "-q", "--allow-empty", "-m", "init")
    yield w


def test_a_session_in_one_worktree_is_remembered_in_the_others(
    world: PiWorld, fake_model: FakeModel
) -> None:
    main = world.project.resolve()
    a = add_worktree(main, main.parent / "project-a", "a")
    b = add_worktree(main, main.parent / "project-b", "b")
    daily = main / ".memsearch" / "memory" / f"{NOW.date().isoformat()}.md"

    world.project = a
    fake_model.agent(Reply.say(ANSWER))
    result = world.run(PROMPT)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: daily.exists() and BULLET in daily.read_text(), 60, "the capture")
    assert not (a / ".memsearch").exists()

    world.project = main
    fake_model.agent(Reply.say("noted"))
    start = len(fake_model.agent_requests)
    assert world.run("hello again").returncode == 0
    assert BULLET in fake_model.agent_requests[start].system

    world.project = b
    seen: dict[str, str] = {}

    def answer(request: Request) -> Reply:
        seen["search"] = request.last_tool_result
        return Reply.say("found it")

    fake_model.agent(Reply.call("memory_search", query="staging cluster region"), answer)
    assert world.run("Where is staging?").returncode == 0
    assert re.search(r"eu-west-3", seen["search"]), seen["search"]
    world.project = main
