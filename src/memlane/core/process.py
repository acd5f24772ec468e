"""Processes: how a memlane process ends once its work is done (every entry
point calls it), whether another one still runs, and how much memory one holds."""

from __future__ import annotations

import os
import sys

# signal's own module (signal.py wraps it in enums, ~1.5 ms of every MCP server's start).
from _signal import SIG_BLOCK, SIGINT, pthread_sigmask  # type: ignore[import-not-found]


def leave_ctrl_c_to_the_main_thread() -> None:
    """Block SIGINT in the calling thread (a worker's first call).

    The kernel hands a signal sent to a process to any thread that does not
    block it. Python only acts on it in the main thread, and a main thread
    blocked reading stdin notices only a signal that interrupts its own
    read: one that lands on a worker left Ctrl-C waiting for the client's
    next line.
    """
    pthread_sigmask(SIG_BLOCK, {SIGINT})


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs: one of another user counts; a
    zombie (exited, not yet reaped by its parent, as an engine whose
    long-lived client started it) does not."""
    if pid <= 0:
        return True  # not an id a writer can have: never treat it as gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # another user's process (PermissionError): it exists
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def rss_mb(pid: int | None = None) -> float | None:
    """Resident memory of *pid* (this process when None), in MB; None if unknown."""
    try:
        with open(f"/proc/{pid or 'self'}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        pass
    return None


def exit_process(code: int) -> None:
    """End the process with *code*, without finalizing under a running native call.

    A daemon thread may still be inside onnxruntime (a model load or an
    embedding the session started and no longer needs) when a short run ends.
    Finalizing the interpreter then makes that thread exit as soon as its
    call returns, by an unwinding through onnxruntime's C++ frames that
    aborts the whole process ("terminate called without an active
    exception", status -6). So once the command is done, a process whose
    other threads are all daemon threads flushes its streams and exits at
    once: the daemon threads' work is abandoned either way, and everything
    memlane must keep is on disk by then, but for what ``core/native``'s
    exit hooks write (a Milvus Lite database's new rows, flushed as its
    server stops), run first. A process with a non-daemon thread
    left exits the ordinary way, which waits for it (and first stops idle
    thread pools, which joining them here would not).
    """
    threading = sys.modules.get("threading")
    if threading is None:
        sys.exit(code)  # nothing imported threading: no other thread runs (a thin client)
    main_thread = threading.main_thread()
    others = [t for t in threading.enumerate() if t is not main_thread and t.is_alive()]
    if not others or any(not t.daemon for t in others):
        sys.exit(code)
    native = sys.modules.get("memlane.core.native")
    if native is not None:
        # What must reach the disk at exit (a Milvus Lite database's unflushed
        # rows) is written by its at_exit hooks, which os._exit would skip.
        native.finish()
    import os

    logging = sys.modules.get("logging")
    if logging is not None:  # a thin client never imported it: 3 ms to import it here
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # a reader that went away: nothing more can reach it
    os._exit(code)
