"""A project's ended sessions hand their warm auto-context worker to its next ones.

A short-lived agent session (one ``codex exec``, one ``claude -p``) used to
open an index connection, run a warm-up search and embed the topic cards for
a single prompt, on the cores the agent was starting on. In the warm engine
the project's ``Background`` keeps the workers of ended sessions
(``WarmWorkers``): the next session's first prompt is searched warm.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from helpers import FixedClock, open_memory, wait_for
from memlane.engine.live.background import Background
from memlane.engine.live.session import Session
from memlane.engine.live.worker import SearchWorker, WarmWorkers, lexical_warm_up
from memlane.engine.project import Memory

WARM_S = 60


def warm_worker(memory: Memory) -> SearchWorker:
    worker = SearchWorker(memory.fork(), first=lexical_warm_up)
    assert worker.ready.wait(WARM_S)
    wait_for(lambda: worker.idle, WARM_S, "the worker's warm-up to finish")
    return worker


class Ticks:
    """An injected monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_given_worker_is_taken_back_warm_and_only_once(memory: Memory) -> None:
    workers = WarmWorkers()
    worker = warm_worker(memory)
    assert workers.give(worker, memory.config, "cards")
    assert len(workers) == 1
    assert workers.take(memory.config) == (worker, "cards")
    assert workers.take(memory.config) is None
    worker.stop()


def test_a_worker_opened_with_other_settings_is_neither_kept_nor_handed_out(
    memory: Memory, project: Path, clock: FixedClock
) -> None:
    other = open_memory(project, clock=clock, MEMLANE_AUTO_CONTEXT="off")
    try:
        assert other.config != memory.config
        workers = WarmWorkers()
        worker = warm_worker(memory)
        assert not workers.give(worker, other.config)  # the caller stops it
        assert workers.give(worker, memory.config)
        assert workers.take(other.config) is None  # settings changed since: stopped
        wait_for(lambda: not worker.idle, WARM_S, "the stale worker to stop")
        assert len(workers) == 0
    finally:
        other.close()


def test_a_busy_worker_is_not_kept(memory: Memory) -> None:
    workers = WarmWorkers()
    worker = warm_worker(memory)
    release = threading.Event()
    worker.submit(lambda _memory: release.wait(WARM_S))  # a search that overran its deadline
    try:
        assert not workers.give(worker, memory.config)
    finally:
        release.set()
        worker.stop()


def test_idle_workers_expire_and_the_oldest_goes_past_the_capacity(memory: Memory) -> None:
    ticks = Ticks()
    workers = WarmWorkers(capacity=2, idle_s=600, monotonic=ticks)
    first, second, third = (warm_worker(memory) for _ in range(3))
    for worker in (first, second, third):
        assert workers.give(worker, memory.config)
        ticks.now += 100
    assert len(workers) == 2
    wait_for(lambda: not first.idle, WARM_S, "the oldest worker to stop")
    ticks.now += 450  # second was given 550 s ago, third 450 s ago
    assert workers.take(memory.config) == (third, None)
    ticks.now += 100  # second idle for 650 s: past IDLE_S
    workers.expire()  # what the timer each give starts does
    assert len(workers) == 0
    wait_for(lambda: not second.idle, WARM_S, "the expired worker to stop")
    third.stop()


def test_a_closed_pool_stops_its_workers_and_keeps_none(memory: Memory) -> None:
    workers = WarmWorkers()
    kept, late = warm_worker(memory), warm_worker(memory)
    assert workers.give(kept, memory.config)
    workers.close()
    wait_for(lambda: not kept.idle, WARM_S, "the kept worker to stop")
    assert not workers.give(late, memory.config)
    late.stop()


def open_session(memory: Memory, background: Background, session_id: str) -> Session:
    return Session.start(
        memory,
        host="test",
        session_id=session_id,
        transcript_path=f"/tmp/t/{session_id}.jsonl",
        settings=replace(memory.config.session, auto_context_enabled=True),
        background=background,
    )


def test_the_next_session_of_the_project_starts_with_the_last_ones_warm_worker(
    memory: Memory,
) -> None:
    # Weeks old: not in the session's snapshot, so only auto-context can bring it.
    weeks_ago = memory.clock.now() - timedelta(days=30)
    memory.write("- the retry queue is drained by the billing worker every minute", now=weeks_ago)
    memory.sync()
    background = Background(memory.fork()).start()  # the project's, as the warm engine keeps it
    try:
        first = open_session(memory, background, "sess-1")
        assert first.internals.wait_auto_context_ready(WARM_S)
        first.shutdown()
        assert len(background.workers) == 1

        second = open_session(memory, background, "sess-2")
        assert len(background.workers) == 0  # taken: no warm-up of its own
        assert second.internals.wait_auto_context_ready(0)  # warm at once
        injection = second.before_agent_start("who drains the retry queue?")
        assert injection.message is not None and "billing worker" in injection.message
        second.shutdown()
        assert len(background.workers) == 1
    finally:
        background.stop()
    assert len(background.workers) == 0


def test_a_timer_stops_a_kept_worker_once_it_expires(memory: Memory) -> None:
    workers = WarmWorkers(idle_s=0.01)  # real time: the timer's own
    worker = warm_worker(memory)
    assert workers.give(worker, memory.config)
    wait_for(lambda: len(workers) == 0, WARM_S, "the timer to expire the kept worker")
    wait_for(lambda: not worker.idle, WARM_S, "the expired worker to stop")
