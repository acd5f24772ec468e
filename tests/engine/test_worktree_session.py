"""A session in a git worktree: the shared memory, or a start notice saying why not (ADR 0035)."""

from __future__ import annotations

from pathlib import Path

from git_worktrees import add_worktree, repository
from helpers import FixedClock, open_memory, start_session


def test_a_session_in_a_worktree_writes_to_the_main_worktrees_store(
    tmp_path: Path, clock: FixedClock
) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "app-feat", "feat")
    mem = open_memory(feat, clock=clock)
    try:
        session = start_session(mem)
        assert not any("worktree" in notice for notice in session.notices)
        entry = mem.write("the feature flag is read once at start")
        assert Path(entry.path).parent == main / ".memsearch" / "memory"
        session.shutdown()
    finally:
        mem.close()


def test_a_session_in_a_broken_worktree_says_it_keeps_its_own_memory(
    tmp_path: Path, clock: FixedClock
) -> None:
    main = repository(tmp_path)
    feat = add_worktree(main, tmp_path / "app-feat", "feat")
    main.rename(tmp_path / "elsewhere")
    mem = open_memory(feat, clock=clock)
    try:
        session = start_session(mem)
        said = [n for n in session.notices if "this worktree keeps its own memory" in n]
        assert said and "git worktree repair" in said[0]
        session.shutdown()
    finally:
        mem.close()
