"""Bounded lock waits: a read never waits on another process's lock for long.

The reference runtime retries a locked-out call on ``BACKOFF_DELAYS_MS``
(200 ms, 500 ms, 1 s, 2 s) and then answers with what it could read, saying
what it could not. Inside ``bounded_waits(delays)`` every lock wait of this
thread made through the helpers below shares one budget of
``sum(delays)`` seconds of waiting (3.7 s with the defaults):

* ``lock_fd_bounded``: a ``flock`` is tried at once, then again after each
  delay of the schedule while the budget lasts, then ``LockWaitedOut``;
* ``acquire_bounded``: a thread lock another thread of this process holds
  (a shared index object whose owner waits on SQLite), waited for at most
  what is left of the budget;
* ``sqlite_wait_s``: SQLite's busy timeout for the next statement, what is
  left of the budget (its busy handler polls within it); a statement that
  met a lock anyway spends its wait with ``spend``.

Only waiting is counted, never work: a search that indexes for 10 s and
then meets a lock still has the whole budget. Once it is spent every later
lock is tried once (SQLite gets ``MIN_SQLITE_WAIT_S``, since a WAL reader
may meet a lock for the odd millisecond) and the caller answers from what
it could read.

Budgets are opened around reads only (a search, expand, similar, status,
auto-context before a prompt). Outside one every helper waits as long as it
takes, so a write still waits its turn and nothing acknowledged is lost.
Nested ``bounded_waits`` share the outer budget. A budget belongs to the
thread (a ``ContextVar``): work handed to another thread is not bounded by
it.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

#: SQLite's busy timeout once the budget is spent (a WAL reader's odd lock).
MIN_SQLITE_WAIT_S = 0.05


@dataclass
class WaitBudget:
    """What one read may still spend waiting for locks."""

    delays_s: tuple[float, ...]
    spent_s: float = 0.0

    @property
    def total_s(self) -> float:
        return sum(self.delays_s)

    @property
    def left_s(self) -> float:
        return max(0.0, self.total_s - self.spent_s)

    @property
    def spent(self) -> bool:
        return self.left_s <= 0.0

    def spend(self, seconds: float) -> None:
        self.spent_s += max(0.0, seconds)

    def schedule(self) -> list[float]:
        """The delays still affordable, in order; the last one clipped to what is left."""
        left = self.left_s
        out: list[float] = []
        for delay in self.delays_s:
            if left <= 0:
                break
            out.append(min(delay, left))
            left -= delay
        return out


_current: ContextVar[WaitBudget | None] = ContextVar("memlane_wait_budget", default=None)


@contextlib.contextmanager
def bounded_waits(delays_ms: Sequence[float]) -> Iterator[WaitBudget]:
    """Bound every lock wait of this thread in the block to ``sum(delays_ms)`` in all.

    Inside another ``bounded_waits`` the outer budget holds (and is yielded).
    """
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    budget = WaitBudget(tuple(max(0.0, float(d)) / 1000 for d in delays_ms))
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def current_budget() -> WaitBudget | None:
    """The budget this thread's lock waits are bounded by, or None (wait as long as it takes)."""
    return _current.get()


def clipped_delays(delays_ms: Sequence[float], total_ms: float) -> list[float]:
    """*delays_ms* cut to add up to at most *total_ms* (a budget under a deadline)."""
    out: list[float] = []
    left = max(0.0, total_ms)
    for delay in delays_ms:
        if left <= 0:
            break
        out.append(min(float(delay), left))
        left -= delay
    return out


class LockWaitedOut(Exception):
    """A lock stayed held for the whole wait budget.

    ``waited_s``: what was spent on this lock; ``spent_s``: on every lock of
    the read so far (the whole budget, when this was the last of it).
    """

    def __init__(self, waited_s: float, spent_s: float) -> None:
        super().__init__(f"lock still held after {spent_s:.1f} s of waiting")
        self.waited_s = waited_s
        self.spent_s = spent_s


def lock_fd_bounded(fd: int, *, exclusive: bool = True) -> None:
    """``flock`` *fd* (held until it is closed or unlocked).

    Outside a budget: wait as long as it takes. Inside one: try now, then
    after each affordable delay, and raise ``LockWaitedOut`` when every try
    found it held.
    """
    operation = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    budget = _current.get()
    if budget is None:
        fcntl.flock(fd, operation)
        return
    started = time.monotonic()
    for delay in [*budget.schedule(), None]:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
        except BlockingIOError:
            if delay is None:
                break
            time.sleep(delay)
            continue
        budget.spend(time.monotonic() - started)
        return
    waited = time.monotonic() - started
    budget.spend(waited)
    raise LockWaitedOut(waited, budget.spent_s)


def acquire_bounded(lock: threading.Lock | threading.RLock) -> None:
    """Acquire a thread lock: as long as it takes outside a budget, else
    within what is left of it (``LockWaitedOut`` when that ran out)."""
    budget = _current.get()
    if budget is None:
        lock.acquire()
        return
    if lock.acquire(blocking=False):
        return
    started = time.monotonic()
    got = lock.acquire(timeout=budget.left_s) if not budget.spent else False
    waited = time.monotonic() - started
    budget.spend(waited)
    if not got:
        raise LockWaitedOut(waited, budget.spent_s)


@contextlib.contextmanager
def holding(lock: threading.Lock | threading.RLock) -> Iterator[None]:
    """``with lock:`` through ``acquire_bounded``."""
    acquire_bounded(lock)
    try:
        yield
    finally:
        lock.release()


def sqlite_wait_s(default_s: float) -> float:
    """SQLite's busy timeout for the next statement: *default_s* outside a
    budget, else what is left of it (at least ``MIN_SQLITE_WAIT_S``)."""
    budget = _current.get()
    if budget is None:
        return default_s
    return min(default_s, max(budget.left_s, MIN_SQLITE_WAIT_S))


def retry_delays_ms(default_ms: Sequence[float]) -> list[float]:
    """The delays to retry a locked-out call on: inside a budget, what it can
    still afford (``WaitBudget.schedule``), else *default_ms*."""
    budget = _current.get()
    return [d * 1000 for d in budget.schedule()] if budget is not None else list(default_ms)


def waited_s(default_s: float) -> float:
    """What this read has waited for locks in all; *default_s* outside a budget."""
    budget = _current.get()
    return budget.spent_s if budget is not None else default_s


def spend(seconds: float) -> None:
    """A wait made outside these helpers (a statement that met a lock) costs the budget."""
    budget = _current.get()
    if budget is not None:
        budget.spend(seconds)
