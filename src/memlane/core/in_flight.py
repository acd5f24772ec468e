"""A value computed on a thread of its own while the caller does other work.

A search embeds its query (an HTTP round trip to an embedding service, or
the bundled model's run, both outside the interpreter lock) while its
index runs the lexical leg, which needs no vector: the two waits overlap
instead of adding up. ``result`` returns the value, or raises what the
computation raised, in the caller's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class InFlight(Generic[T]):
    """``compute()`` started now on a daemon thread (a hung call never keeps
    the process from exiting); ``result()`` waits for it."""

    def __init__(self, compute: Callable[[], T], *, name: str = "memlane-in-flight") -> None:
        self._future: Future[T] = Future()
        threading.Thread(target=self._run, args=(compute,), name=name, daemon=True).start()

    def _run(self, compute: Callable[[], T]) -> None:
        try:
            value = compute()
        except BaseException as exc:  # handed to the caller of result()
            self._future.set_exception(exc)
        else:
            self._future.set_result(value)

    def done(self) -> bool:
        return self._future.done()

    def settle(self) -> None:
        """Wait for the computation to end, whatever its outcome (a caller
        that gave up on the value still lets it finish its side effects)."""
        self._future.exception()

    def result(self) -> T:
        return self._future.result()
