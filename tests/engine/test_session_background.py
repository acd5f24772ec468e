"""engine/live/background.py: the work every host starts behind an open Memory."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from helpers import FixedClock, open_memory, wait_for
from memlane.engine.live.background import start_background


def _sweepers(since: set[threading.Thread]) -> list[threading.Thread]:
    """Sweeper threads started after *since* was taken (other tests may leave their own)."""
    return [
        t for t in threading.enumerate() if t.name == "memlane-sessions-sweep" and t not in since
    ]


def test_catches_the_sessions_layer_up_then_sweeps_until_stopped(
    project: Path, clock: FixedClock
) -> None:
    mem = open_memory(project, clock=clock)
    assert mem.config.sessions.enabled
    before = set(threading.enumerate())
    background = start_background(mem)
    try:
        wait_for(lambda: background.sessions_layer is not None, 20, "the sessions layer")
        wait_for(lambda: _sweepers(before), 20, "the sweeper after the catch-up")
    finally:
        background.stop(timeout_s=5)
    wait_for(lambda: not _sweepers(before), 5, "the sweeper stopped")
    assert background.notices == []
    layer = background.sessions_layer
    assert layer is not None
    layer.close()
    mem.close()


def test_stopped_before_the_catch_up_ends_starts_no_sweeper(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.engine.sessions.layer import SessionsLayer

    release = threading.Event()
    backfill = SessionsLayer.backfill

    def slow_backfill(self: SessionsLayer, *args: object, **kwargs: object) -> object:
        release.wait(10)
        return backfill(self)

    monkeypatch.setattr(SessionsLayer, "backfill", slow_backfill)
    mem = open_memory(project, clock=clock)
    before = set(threading.enumerate())
    background = start_background(mem)
    wait_for(lambda: background.sessions_layer is not None, 20, "the sessions layer")
    background.stop()
    release.set()
    for thread in set(threading.enumerate()) - before:
        if thread.name == "memlane-sessions-start":
            thread.join(10)
    assert not _sweepers(before)
    layer = background.sessions_layer
    assert layer is not None
    layer.close()
    mem.close()


def test_an_unusable_sessions_layer_is_a_notice_never_an_error(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.engine.sessions import layer as sessions_layer

    def broken(memory: object) -> object:
        raise OSError("disk on fire")

    monkeypatch.setattr(sessions_layer, "SessionsLayer", broken)
    mem = open_memory(project, clock=clock)
    notices: list[str] = []
    background = start_background(mem, notices)
    wait_for(lambda: notices, 20, "the notice")
    assert notices == ["sessions layer unavailable: disk on fire"]
    assert background.sessions_layer is None
    background.stop()
    mem.close()


def test_nothing_starts_when_the_configuration_asks_for_nothing(
    project: Path, clock: FixedClock
) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_SESSIONS_ENABLED="false")
    assert not mem.config.sessions.enabled
    assert mem.config.embedding.provider == "none"
    before = {t.name for t in threading.enumerate()}
    background = start_background(mem)
    started = {t.name for t in threading.enumerate()} - before
    assert not {"memlane-sessions-start", "memlane-embedder-warmup"} & started
    assert background.sessions_layer is None
    background.stop()
    mem.close()
