"""A session in a git worktree: the shared memory, or a start notice saying why not (ADR 0035)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _transcript_builders import PiSession
from git_worktrees import add_worktree, repository
from helpers import FixedClock, open_memory, start_session
from memlane.engine.sessions.layer import SessionsLayer
from memlane.transcripts.locate import pi_project_dir


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


def _pi_session(checkout: Path, session_id: str, ask: str) -> None:
    session = PiSession(session_id)
    session.user(ask)
    session.assistant("done")
    folder = pi_project_dir(str(checkout))
    folder.mkdir(parents=True, exist_ok=True)
    session.write(folder / f"2026-11-30T10-00-00_{session_id}.jsonl")


@pytest.mark.parametrize("setting", ["shared", "separate"])
def test_the_sessions_layer_reads_every_worktrees_sessions_when_they_share(
    tmp_path: Path, clock: FixedClock, setting: str
) -> None:
    main = repository(tmp_path)
    a = add_worktree(main, tmp_path / "app-a", "a")
    b = add_worktree(main, tmp_path / "app-b", "b")
    for checkout, sid in ((main, "s-main"), (a, "s-a"), (b, "s-b")):
        _pi_session(checkout, sid, f"the question asked in {checkout.name}")
    for where in (main, b):
        mem = open_memory(where, clock=clock, MEMLANE_SCOPE_WORKTREES=setting)
        try:
            layer = SessionsLayer(mem, embedder=None)
            layer.backfill()
            found = {info.session_id for info in layer.recent(10)}
        finally:
            mem.close()
        if setting == "shared":  # one index, every worktree's sessions
            assert found == {"s-main", "s-a", "s-b"}, where
        else:
            assert found == {"s-main" if where == main else "s-b"}, where
