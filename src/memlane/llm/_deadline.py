"""A total deadline around a blocking call.

Socket timeouts bound each read, not the whole exchange: a server that
trickles a byte every second never trips a 30 s read timeout. So the work
runs on a daemon thread and the caller stops waiting at the deadline. The
worker gets a ``cancel`` event to check between reads and winds down on its
own; nothing is closed from the caller's thread, because httpx connections
and subprocess pipes are not safe to close under a thread that is reading.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

from memlane.core.errors import LlmError

T = TypeVar("T")


class Cancelled(Exception):
    """Raised inside a worker that noticed its caller gave up."""


def timed_out(timeout_s: float, hint: str | None = None) -> LlmError:
    return LlmError(f"timed out after {timeout_s:g} s", hint)


def call_with_deadline(
    work: Callable[[threading.Event], T],
    timeout_s: float,
    *,
    thread_name: str,
    hint: str | None = None,
) -> T:
    """``work(cancel)``'s result, or ``LlmError("timed out after N s")`` at the deadline.

    Exceptions raised by ``work`` propagate unchanged.
    """
    cancel = threading.Event()
    outcome: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            outcome.put((True, work(cancel)))
        except BaseException as exc:  # handed to the caller, which decides
            outcome.put((False, exc))

    threading.Thread(target=run, name=thread_name, daemon=True).start()
    try:
        ok, value = outcome.get(timeout=max(0.0, timeout_s))
    except queue.Empty:
        cancel.set()
        raise timed_out(timeout_s, hint) from None
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
