"""Memory follows the repository across git worktrees, as a user runs memlane.

Each ``memlane`` is a new process started as the ``memlane`` script starts
it (a running warm engine serves the quick commands, as it would for a
person), each worktree made by the real ``git worktree add`` (ADR 0035).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_worktrees import add_worktree, git, repository

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
#: What the ``memlane`` script runs: a quick command goes to a running engine.
MEMLANE = [sys.executable, "-m", "memlane.cli.fast"]


def run_memlane(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


FACT = "the billing service counts refunded orders as fulfilled"


def hits(where: Path, query: str = "refunded orders", **env: str) -> list[str]:
    """The hits' texts; none when the checkout has no store yet (said, exit 1)."""
    done = run_memlane("search", query, "--json", cwd=where, env={**LEXICAL, **env})
    if done.returncode == 1 and "no memory store at" in done.stderr:
        return []
    assert done.returncode == 0, done.stderr
    return [hit["content"] for hit in json.loads(done.stdout)["hits"]]


def write(where: Path, text: str, **env: str) -> None:
    done = run_memlane("write", text, cwd=where, env={**LEXICAL, **env})
    assert done.returncode == 0, done.stderr


def scope_json(where: Path, **env: str) -> dict[str, object]:
    done = run_memlane("scope", "--json", cwd=where, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


@pytest.fixture
def worktrees(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository's main worktree and two linked ones, side by side."""
    main = repository(tmp_path)
    return (
        main,
        add_worktree(main, tmp_path / "app-a", "a"),
        add_worktree(main, tmp_path / "app-b", "b"),
    )


def test_a_fact_written_in_one_worktree_is_found_from_every_other(
    worktrees: tuple[Path, Path, Path],
) -> None:
    main, a, b = worktrees
    write(a, FACT)
    (b / "src").mkdir()
    for where in (main, a, b, b / "src"):
        assert any(FACT in hit for hit in hits(where)), where
    shown = scope_json(b)
    assert shown["store"] == str(main / ".memsearch" / "memory")
    assert shown["repository_dir"] == str(b)
    assert shown["worktree"] == {
        "checkout": str(b),
        "setting": "shared",
        "origin": "default",
        "shared_with": str(main),
        "reason": f"shared with the main worktree at {main} (scope.worktrees = shared, default)",
        "problem": None,
    }
    assert scope_json(main)["worktree"] is None
    status = run_memlane("status", "--json", cwd=a, env=LEXICAL)
    assert json.loads(status.stdout)["scope"]["worktree"]["shared_with"] == str(main)
    text = run_memlane("status", cwd=a, env=LEXICAL).stdout
    assert f"worktree         shared with the main worktree at {main}" in text
    # The main checkout's status names the worktrees its memory is shared with.
    shown = json.loads(run_memlane("status", "--json", cwd=main, env=LEXICAL).stdout)
    assert shown["scope"]["shared_by"] == [str(main), str(a), str(b)]
    text = run_memlane("status", cwd=main, env=LEXICAL).stdout
    assert f"this memory is shared with 2 other checkout(s): {a}, {b}" in text


def test_separate_keeps_each_worktrees_memory_apart(
    worktrees: tuple[Path, Path, Path],
) -> None:
    main, a, b = worktrees
    separate = {"MEMLANE_SCOPE_WORKTREES": "separate"}
    write(a, FACT, **separate)
    assert any(FACT in hit for hit in hits(a, **separate))
    assert hits(b, **separate) == [] and hits(main, **separate) == []
    done = run_memlane("search", "refunded", cwd=b, env={**LEXICAL, **separate})
    assert f"no memory store at {b}/.memsearch/memory (this worktree keeps its own" in done.stderr
    assert not (main / ".memsearch").exists()
    assert "shared_by" not in scope_json(main, **separate)
    assert scope_json(a, **separate)["store"] == str(a / ".memsearch" / "memory")
    # The setting from the global file: `memlane config set` as a user would.
    done = run_memlane("config", "set", "scope.worktrees", "separate", cwd=b)
    assert done.returncode == 0, done.stderr
    worktree = scope_json(b)["worktree"]
    assert isinstance(worktree, dict)
    assert (
        worktree["reason"]
        == "this worktree keeps its own memory (scope.worktrees = separate, global)"
    )


def test_a_moved_main_worktree_is_said_and_repair_brings_the_memory_back(
    worktrees: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    main, a, _ = worktrees
    write(a, FACT)
    moved = main.rename(tmp_path / "app-moved")
    shown = scope_json(a)
    assert shown["store"] == str(a / ".memsearch" / "memory")
    worktree = shown["worktree"]
    assert isinstance(worktree, dict) and "was moved or deleted" in str(worktree["problem"])
    done = run_memlane("search", "refunded", cwd=a, env=LEXICAL)
    assert "this worktree keeps its own memory" in done.stderr
    assert "git worktree repair" in done.stderr
    git(moved, "worktree", "repair", str(a))
    assert any(FACT in hit for hit in hits(a))


def test_through_the_warm_engine_each_worktree_reports_its_own_checkout(
    worktrees: tuple[Path, Path, Path],
) -> None:
    main, a, b = worktrees
    write(main, FACT)
    started = run_memlane("engine", "start", cwd=main, env=LEXICAL)
    assert started.returncode == 0, started.stderr
    # The engine opened the project from the main checkout; a worktree's
    # commands share that memory but say where they run and why.
    assert "\nworktree " not in run_memlane("status", cwd=main, env=LEXICAL).stdout
    for where in (a, b):
        shown = json.loads(run_memlane("status", "--json", cwd=where, env=LEXICAL).stdout)
        assert shown["engine"]["running"], shown["engine"]
        assert shown["scope"]["repository_dir"] == str(where)
        assert shown["scope"]["worktree"]["checkout"] == str(where)
        assert any(FACT in hit for hit in hits(where))
    run_memlane("engine", "stop", "--all", cwd=main)
