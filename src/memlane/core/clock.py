"""The one source of "now".

Everything that lets the date or time decide something (the daily file's
name, the ``## Session`` / ``### HH:MM`` headings, the snapshot's day and its
rollover, the dream nudge's hours, the sessions sweep's backoff, the index
state's timestamps) asks a ``Clock`` handed down from ``Memory`` or
``Session``, never the wall clock directly. That keeps a session's writes on
one calendar (its own compaction lands in the same day's file as its
entries) and lets tests and replays run on any day with a ``FixedClock``.

Durations and deadlines are another matter: they use ``time.monotonic``,
which no calendar change can move.

``MEMLANE_NOW`` (an ISO 8601 time) makes a memlane process start its
clock at that moment and run on from there (``clock_from_env``): for
replaying a recorded session as of its day, a demo, or a test that drives
real processes.

``now()`` is an aware datetime whose offset *is* the local time: a daily
file is named after ``now().date()`` as the clock gives it. The system
clock answers in the machine's time zone; a ``FixedClock`` in whatever
zone it was given (UTC for a naive moment), so a test means the same day
on every machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo

from memlane.core.errors import ConfigError

NOW_ENV = "MEMLANE_NOW"


class Clock:
    """The system's wall clock, in the machine's local time zone."""

    def now(self) -> datetime:
        """The current local time, time-zone aware."""
        # memlane's one read of the wall clock (tests/core/test_clock.py keeps it so).
        return datetime.fromtimestamp(time.time()).astimezone()

    def utc(self) -> datetime:
        """The current time in UTC."""
        return self.now().astimezone(UTC)

    def today(self) -> date:
        """The local date (what names today's daily file)."""
        return self.now().date()

    def timestamp(self) -> float:
        """Seconds since the epoch."""
        return self.now().timestamp()

    def departure(self) -> str | None:
        """How this clock departs from the system's, for the doctor; None: it doesn't."""
        return None

    def zone(self) -> tzinfo | None:
        """The zone of this clock's calendar (local time): None for the
        machine's own, whose offset changes with the date (summer time)."""
        return None


SYSTEM_CLOCK = Clock()


class FixedClock(Clock):
    """A clock that stands still until it is moved: for tests and replays.

    A naive *moment* is taken as UTC, so the same moment gives the same
    daily file on every machine. Thread-safe: a session's background
    workers may read it while a test moves it.
    """

    def __init__(self, moment: datetime) -> None:
        self._lock = threading.Lock()
        self._moment = _aware(moment)

    def now(self) -> datetime:
        with self._lock:
            return self._moment

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._moment = _aware(moment)

    def advance(self, delta: timedelta | None = None, /, **parts: float) -> datetime:
        """Move forward by *delta* or by ``timedelta(**parts)``; return the new time."""
        step = delta if delta is not None else timedelta(**parts)
        with self._lock:
            self._moment = self._moment + step
            return self._moment

    def departure(self) -> str | None:
        return f"a fixed clock stands at {self.now().isoformat()}"

    def zone(self) -> tzinfo | None:
        return self.now().tzinfo

    def __repr__(self) -> str:
        return f"FixedClock({self.now().isoformat()})"


class RunningClock(Clock):
    """A clock that starts at a given moment and runs at the real pace from there."""

    def __init__(self, start: datetime) -> None:
        self.start = _aware(start)
        self._started = time.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self._started)

    def zone(self) -> tzinfo | None:
        return self.start.tzinfo

    def departure(self) -> str | None:
        return (
            f"{NOW_ENV} started this process's clock at {self.start.isoformat()}, "
            "so entries are dated from there, not by the system clock; unset it to go back"
        )

    def __repr__(self) -> str:
        return f"RunningClock(from {self.start.isoformat()})"


def clock_from_env(env: Mapping[str, str]) -> Clock:
    """The system clock, or a ``RunningClock`` from ``MEMLANE_NOW`` when it is set."""
    raw = (env.get(NOW_ENV) or "").strip()
    if not raw:
        return SYSTEM_CLOCK
    try:
        start = datetime.fromisoformat(raw)
    except ValueError:
        raise ConfigError(
            f"{NOW_ENV}={raw!r} is not an ISO 8601 time",
            f"use e.g. {NOW_ENV}=2026-11-30T10:00:00Z, or unset it to use the system clock",
        ) from None
    return RunningClock(start if start.tzinfo is not None else start.astimezone())


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def local(moment: datetime) -> datetime:
    """*moment* as local time: an aware one keeps its own offset, a naive one is the machine's."""
    return moment if moment.tzinfo is not None else moment.astimezone()


def utc_z(moment: datetime) -> str:
    """``2026-11-30T16:05:00Z``: UTC, whole seconds (memsearch's state format)."""
    return local(moment).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_z_millis(moment: datetime) -> str:
    """``2026-11-30T16:05:00.123Z``: UTC with milliseconds (trace lines)."""
    stamp = local(moment).astimezone(UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{stamp.microsecond // 1000:03d}Z"


def from_epoch(seconds: float) -> datetime:
    """An epoch time as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)
