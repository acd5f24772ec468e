"""Native calls on memlane's daemon threads, and the interpreter's exit.

memlane loads the model, embeds and talks to Milvus Lite on daemon threads
(a session's warm-up, its indexer, its auto-context worker), so a host never
waits for them. Those calls run native code with the GIL released:
onnxruntime and gRPC (C++), tokenizers (Rust). Python up to 3.13 ends a
daemon thread at interpreter exit as soon as it takes the GIL back, by
unwinding its stack (``pthread_exit``); inside onnxruntime that unwinding
runs through a C++ destructor and aborts the whole process ("terminate called
without an active exception", status 134) after the program itself finished
well. A program embedding memlane (``Memory``, ``Session``) exits the
ordinary way, so memlane makes that way safe:

* every such call runs inside ``native_call()``, which counts the calls in
  flight;
* when the interpreter starts to exit (threading's exit hooks, which run
  before any thread pool shuts down and long before daemon threads are
  stopped), no daemon thread *starts* a native call any more: it waits at
  the gate, for ever, and the process ends with it waiting there, which is
  harmless; the exit waits for the calls already in flight to return (each
  is short: one model load, one batch of texts, one index operation), then
  runs the hooks given to ``at_exit`` (Milvus Lite's servers are flushed and
  stopped there, once no call uses them).

Threads that are not daemon threads (the main thread, a program's own
threads, thread-pool workers) never wait at the gate: the interpreter joins
them before it stops anything, so their calls end normally.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Iterator

#: The exit waits at most this long for native calls in flight (each is one
#: model load, one batch or one index operation: normally well under a second).
EXIT_WAIT_S = 30.0

_state = threading.Condition()
_in_flight = 0
_closed = False
_hooked = False
_exit_hooks: list[Callable[[], None]] = []
_depth = threading.local()


@contextlib.contextmanager
def native_call() -> Iterator[None]:
    """Run one native call (or a short run of them) that exit must not cut.

    On a daemon thread once the interpreter is exiting, this never returns:
    the thread parks here until the process is gone. Nested calls on one
    thread count once.
    """
    depth = getattr(_depth, "value", 0)
    if depth:
        _depth.value = depth + 1
        try:
            yield
        finally:
            _depth.value = depth
        return
    _enter()
    _depth.value = 1
    try:
        yield
    finally:
        _depth.value = 0
        _leave()


def at_exit(hook: Callable[[], None]) -> None:
    """Run *hook* at interpreter exit, once no native call is in flight.

    Hooks run last-registered first, like ``atexit``'s; one that raises does
    not stop the others.
    """
    _hook_exit()
    with _state:
        _exit_hooks.append(hook)


def finish() -> None:
    """Do now what the interpreter's exit would do here, for a process about
    to end without it (``core/process.exit_process``'s ``os._exit``): when
    an ``at_exit`` hook is registered (a Milvus Lite database is open, its
    new rows not yet flushed), close the gate, wait for the calls in flight,
    run the hooks. Without hooks it returns at once: nothing waits for a
    model load a short command no longer needs."""
    with _state:
        if not _exit_hooks:
            return
    _close()


def _enter() -> None:
    global _in_flight
    _hook_exit()
    with _state:
        if _closed and threading.current_thread().daemon:
            park = True
        else:
            _in_flight += 1
            park = False
    if park:
        threading.Event().wait()  # never set: the process ends with this thread here


def _leave() -> None:
    global _in_flight
    with _state:
        _in_flight -= 1
        _state.notify_all()


def _hook_exit() -> None:
    """Register ``_close`` among threading's exit hooks, once.

    Those run last-registered first, and before the thread pools stop (their
    hook is ``concurrent.futures.thread``'s, registered when that module is
    imported): importing it first puts ``_close`` ahead of it, so a daemon
    thread never finds the pool it submits batches to shut down under it.
    """
    global _hooked, _closed
    with _state:
        if _hooked:
            return
        _hooked = True
    import concurrent.futures.thread  # noqa: F401 - its exit hook must be registered first

    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - CPython has it since 3.9
        atexit.register(_close)
        return
    try:
        register(_close)
    except RuntimeError:  # the interpreter is already exiting
        with _state:
            _closed = True


def _close() -> None:
    """At exit: close the gate to daemon threads, wait for the calls in flight,
    then run the ``at_exit`` hooks."""
    global _closed
    import time

    deadline = time.monotonic() + EXIT_WAIT_S
    with _state:
        _closed = True
        while _in_flight > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _state.wait(left)
        hooks = list(reversed(_exit_hooks))
        _exit_hooks.clear()
    for hook in hooks:
        with contextlib.suppress(Exception):
            hook()


def import_numpy_first() -> None:
    """Import numpy, whole, on this thread: call it before importing a library
    whose native code imports numpy itself (onnxruntime).

    A thread importing onnxruntime (its C++ start imports numpy's C extension)
    while another imports numpy can leave numpy half-initialized: that import
    fails, and every later one in the process says "cannot load module more
    than once per process" (13 of 150 runs of two such threads here; a
    session's start met it while the model loaded). Imported first, numpy is
    whole when onnxruntime asks for it, and two threads importing numpy wait
    for each other in Python's import lock.
    """
    import numpy  # noqa: F401
