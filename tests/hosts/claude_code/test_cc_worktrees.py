"""Claude Code in two git worktrees of one repository (ADR 0035): the Stop hook
of a session in one captures into the main worktree's store, and a session
started in the other gets that entry in its snapshot. The real hook command,
the real warm engine, real ``git worktree add``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _cc import Hooks, daily_text

from _transcript_builders import ClaudeSession
from git_worktrees import add_worktree, repository
from helpers import wait_for

pytestmark = pytest.mark.subprocess


@pytest.fixture
def checkouts(tmp_path: Path) -> tuple[Path, Path, Path]:
    main = repository(tmp_path)
    return (
        main,
        add_worktree(main, tmp_path / "app-a", "a"),
        add_worktree(main, tmp_path / "app-b", "b"),
    )


@pytest.fixture
def home(isolated_home: Path) -> Iterator[Path]:
    yield isolated_home
    Hooks(isolated_home, isolated_home).stop_engines()


def test_a_capture_in_one_worktree_is_in_the_next_sessions_snapshot_in_another(
    home: Path, checkouts: tuple[Path, Path, Path]
) -> None:
    main, a, b = checkouts
    in_a, in_b = Hooks(home, a), Hooks(home, b)
    in_a.call("SessionStart", "sess-a", source="startup")
    t = ClaudeSession("sess-a")
    t.user("which queue does the mailer use?")
    t.assistant(
        [{"type": "text", "text": "The mailer uses the low-priority SQS queue."}], msg_id="m1"
    )
    t.write(a / "sess-a.jsonl")
    in_a.call("Stop", "sess-a")
    wait_for(lambda: "low-priority SQS" in daily_text(main), what="the capture in main's store")
    assert not (a / ".memsearch").exists() and not (b / ".memsearch").exists()
    out = in_b.call("SessionStart", "sess-b", source="startup")
    assert out is not None
    assert "low-priority SQS" in out["hookSpecificOutput"]["additionalContext"]
    assert in_a.failures() == [] and in_b.failures() == []
