"""engine/live/slot.py: a long-lived host's current project and session, switched by the engine's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import FixedClock, make_project
from memlane.core.errors import MemlaneError
from memlane.engine.live.slot import SessionSlot


@pytest.fixture(autouse=True)
def _lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    # The slot opens memories the way a host does, from the environment.
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")


def _start(slot: SessionSlot, cwd: Path | None, session_id: str) -> None:
    slot.start(str(cwd) if cwd else None, session_id=session_id, transcript_path=None, host="test")


def test_a_new_session_ends_the_previous_one_and_keeps_the_project(
    project: Path, clock: FixedClock
) -> None:
    slot = SessionSlot(project, clock=clock)
    _start(slot, None, "s-1")
    first, memory = slot.session, slot.memory
    assert first is not None and memory is not None
    _start(slot, project, "s-2")
    assert slot.session is not first and slot.session is not None
    assert slot.session.session_id == "s-2"
    assert slot.memory is memory  # the same project: the same memory, still open
    slot.close()


def test_another_directory_switches_the_memory(
    project: Path, tmp_path: Path, clock: FixedClock
) -> None:
    other = make_project(tmp_path, "other")
    slot = SessionSlot(project, clock=clock)
    _start(slot, None, "s-1")
    before = slot.memory
    _start(slot, other, "s-2")
    assert slot.memory is not before and slot.memory is not None
    assert slot.memory.scope.repository_dir == other
    assert slot.directory == other
    slot.close()


def test_a_project_that_cannot_be_opened_leaves_none_open(
    project: Path, tmp_path: Path, clock: FixedClock
) -> None:
    slot = SessionSlot(project, clock=clock)
    _start(slot, None, "s-1")
    slot.open_memory().write("for the first")
    missing = tmp_path / "missing"
    with pytest.raises(MemlaneError):
        _start(slot, missing, "s-2")
    assert slot.memory is None and slot.session is None
    with pytest.raises(MemlaneError) as again:
        slot.open_memory()  # later calls name the project the host asked for
    assert str(missing) in again.value.message


def test_close_writes_what_is_pending_and_closes(project: Path, clock: FixedClock) -> None:
    slot = SessionSlot(project, clock=clock)
    assert slot.close() is None  # nothing started: nothing to flush
    _start(slot, None, "s-1")
    flush = slot.close()
    assert flush is not None and flush.flushed and flush.pending == 0
    assert slot.session is None and slot.memory is None
