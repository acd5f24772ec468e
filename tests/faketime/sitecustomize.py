"""Loaded by ``make test-dates`` (PYTHONPATH) into every Python process it runs.

Under libfaketime the wall clock moves to another day, and two things stop
working that have nothing to do with dates:

* With the monotonic clock faked too (libfaketime's default), every timed
  wait on a lock (``Event.wait``, ``Thread.join``, ``queue.get`` with a
  timeout) hangs: CPython waits with ``sem_clockwait(CLOCK_MONOTONIC)``,
  which Debian's libfaketime 0.9.10 does not intercept, so the kernel compares
  a faked deadline with the real clock. ``make test-dates`` therefore sets
  ``FAKETIME_DONT_FAKE_MONOTONIC=1``: the monotonic clock names no day.
* With the monotonic clock left alone, libfaketime still rewrites the
  absolute deadline of ``clock_nanosleep``, which CPython's ``time.sleep``
  uses, and the call fails with EINVAL. This replaces ``time.sleep`` with a
  timed wait on an event, which sleeps the same time on the real monotonic
  clock.

Outside libfaketime this module does nothing.
"""

from __future__ import annotations

import os

if "faketime" in os.environ.get("LD_PRELOAD", "") and os.environ.get("FAKETIME"):
    import threading
    import time

    def _sleep(seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        threading.Event().wait(seconds)

    time.sleep = _sleep
