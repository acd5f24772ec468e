"""Bounded lock waits (core/waits.py) and who holds a lock (core/locks.py), against
real locks: a ``flock`` another process holds, a thread lock another thread holds."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from helpers import wait_for
from lock_holder import HeldLock
from memlane.core.locks import describe_holders, lock_holders
from memlane.core.waits import (
    MIN_SQLITE_WAIT_S,
    LockWaitedOut,
    WaitBudget,
    acquire_bounded,
    bounded_waits,
    clipped_delays,
    current_budget,
    lock_fd_bounded,
    sqlite_wait_s,
)


def test_a_budget_is_the_sum_of_its_delays_and_only_waiting_spends_it() -> None:
    budget = WaitBudget((0.2, 0.5, 1.0, 2.0))
    assert budget.total_s == pytest.approx(3.7)
    assert budget.schedule() == [0.2, 0.5, 1.0, 2.0]
    budget.spend(1.0)
    assert budget.left_s == pytest.approx(2.7)
    assert budget.schedule() == pytest.approx([0.2, 0.5, 1.0, 1.0])  # the last one clipped
    budget.spend(5.0)
    assert budget.spent and budget.schedule() == []
    assert clipped_delays([200, 500, 1000, 2000], 300) == [200, 100]
    assert clipped_delays([200, 500], 0) == []


def test_nested_reads_share_the_outer_budget_and_other_threads_have_none() -> None:
    assert current_budget() is None
    seen: list[WaitBudget | None] = []
    with bounded_waits([100, 200]) as outer:
        with bounded_waits([5000]) as inner:
            assert inner is outer
        thread = threading.Thread(target=lambda: seen.append(current_budget()))
        thread.start()
        thread.join()
    assert seen == [None]
    assert current_budget() is None


def test_sqlite_waits_are_bounded_only_inside_a_budget() -> None:
    assert sqlite_wait_s(10.0) == 10.0
    with bounded_waits([200, 500]) as budget:
        assert sqlite_wait_s(10.0) == pytest.approx(0.7)
        assert sqlite_wait_s(0.2) == 0.2
        budget.spend(1.0)
        assert sqlite_wait_s(10.0) == MIN_SQLITE_WAIT_S


@pytest.mark.subprocess
def test_a_flock_another_process_holds_is_given_up_inside_a_budget_and_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "some.lock"
    with HeldLock("flock", path) as holder:
        assert lock_holders(path) == [holder.pid]
        assert lock_holders(path, exclusive=True) == [holder.pid]
        assert describe_holders(lock_holders(path)).startswith(f"pid {holder.pid} (python")
        fd = os.open(path, os.O_RDWR)
        try:
            with bounded_waits([10, 20, 30]) as budget, pytest.raises(LockWaitedOut) as caught:
                lock_fd_bounded(fd)
            assert budget.spent
            assert caught.value.spent_s == budget.spent_s
            # Outside a budget the wait lasts until the holder lets go.
            got = threading.Event()

            def take() -> None:
                lock_fd_bounded(fd)
                got.set()

            waiter = threading.Thread(target=take)
            waiter.start()
            assert not got.is_set()
            holder.release()
            wait_for(got.is_set, 30, "the lock taken once released")
            waiter.join()
        finally:
            os.close(fd)
    assert lock_holders(path) == []
    assert describe_holders([]) == "another process"
    assert describe_holders([os.getpid()]) == f"this process (pid {os.getpid()})"


def test_a_thread_lock_is_waited_for_within_what_is_left_of_the_budget() -> None:
    lock = threading.Lock()
    lock.acquire()
    try:
        with bounded_waits([10, 20]), pytest.raises(LockWaitedOut):
            acquire_bounded(lock)
    finally:
        lock.release()
    with bounded_waits([10]):
        acquire_bounded(lock)  # free: taken at once
    lock.release()
