"""How long a read may wait for a lock, and what it says when it stopped waiting.

A search, expand, similar, status or auto-context call runs inside
``read_waits(memory)``: every lock it meets (the index's rebuild lock while
opening, SQLite's write lock for the catch-up before a search, a shared
index object another thread is using, the topics lock while a dream is
applied, a Milvus Lite database another process holds) is retried on
``session.backoff_delays_ms`` (200, 500, 1000, 2000 ms: 3.7 s of waiting in
all, core/waits.py) and then given up. The call then answers from what it
could read and says, in a notice, which part it could not read and who
holds it:

* the catch-up before a search (the newest writes) is skipped: the index
  answers as it stands, the writes stay noted for the next search or index
  run (they are in the markdown: nothing is lost);
* an index that cannot be opened answers nothing for its part (the notes,
  or the sessions layer), and the other parts still answer.

Writes are never inside a budget: ``memory_write`` appends to the daily
file under its own lock and waits its turn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from memlane.core.waits import WaitBudget, bounded_waits, clipped_delays

if TYPE_CHECKING:
    from memlane.core.errors import MemlaneError
    from memlane.engine.shared.ports import ProjectMemory

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound="ProjectMemory")

#: The start of the notice a search gives when its catch-up met a lock.
NEWEST_NOT_INDEXED = "the newest memories are not in these results"


@contextmanager
def read_waits(memory: ProjectMemory, *, within_ms: float | None = None) -> Iterator[WaitBudget]:
    """Bound the lock waits of one read of *memory* (nested reads share the budget).

    ``within_ms``: a read under a deadline (auto-context's) waits at most
    that long, on the same schedule cut short.
    """
    delays: list[float] = list(memory.config.session.backoff_delays_ms)
    if within_ms is not None:
        delays = clipped_delays(delays, within_ms)
    with bounded_waits(delays) as budget:
        yield budget


def bounded_read(read: Callable[Concatenate[M, P], R]) -> Callable[Concatenate[M, P], R]:
    """*read* (whose first argument is the memory it reads) inside ``read_waits``."""

    @functools.wraps(read)
    def bounded(memory: M, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with read_waits(memory):
            return read(memory, *args, **kwargs)

    return bounded


def newest_not_indexed(exc: MemlaneError) -> str:
    """The catch-up before a search met a lock: the search answers without it."""
    return (
        f"{NEWEST_NOT_INDEXED}: indexing them waited for a lock and gave up "
        f"({exc.message}); they are kept in the markdown and indexed once it is released"
    )


def sessions_unread(exc: MemlaneError) -> str:
    """The sessions layer could not be read in time: the notes answered alone."""
    return f"past sessions were not searched: {exc.message}; retry in a moment"


def sessions_not_caught_up(exc: MemlaneError) -> str:
    return (
        "the newest messages of past sessions may be missing: indexing them waited for a "
        f"lock and gave up ({exc.message})"
    )
