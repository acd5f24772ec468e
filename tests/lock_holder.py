"""Another process holding one of memlane's real locks until the test lets go.

``with HeldLock("write", index_path) as holder:`` starts this file as a
script in a new process, which takes the lock, says ``held``, and keeps it
until ``holder.release()`` (or the end of the block) tells it to let go, or
until the test process dies (its standard input closes). The lock is real,
so memlane's own code meets it exactly as it would meet another memlane:

* ``write``: SQLite's write lock on a database (``BEGIN IMMEDIATE``), as an
  indexing process holds it for the length of a transaction;
* ``flock``: an exclusive ``flock`` on a file, e.g. ``<index>.lock`` as a
  rebuild holds it, or a store's ``.topics.lock``;
* ``milvus``: a Milvus Lite database opened (Lite allows one process at a time).

``answered_while_held(call, holder)`` runs *call* on a thread and returns its
result, failing the test when it did not answer while the lock was still
held (no timing is asserted: a call that waits for the lock never answers
before the holder lets go).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: How long a call may take to answer while the lock is held (a busy machine).
ANSWER_TIMEOUT_S = 120.0


class HeldLock:
    """A process holding a real lock until ``release``."""

    def __init__(self, kind: str, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, kind, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != "held":
            self.process.kill()
            _, err = self.process.communicate(timeout=30)
            raise AssertionError(f"the lock holder did not take the {kind} lock: {line} {err}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def holding(self) -> bool:
        return self.process.poll() is None

    def release(self) -> None:
        """Let go of the lock and wait until the holder is gone."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("release\n")
            self.process.stdin.flush()
            self.process.stdin.close()
        self.process.wait(timeout=60)

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.release()
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=30)


def answered_while_held(call: Callable[[], T], holder: HeldLock) -> T:
    """*call*'s result (or its exception, raised here), given while *holder* still holds."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="answered-while-held", daemon=True)
    thread.start()
    thread.join(ANSWER_TIMEOUT_S)
    assert outcome, f"no answer within {ANSWER_TIMEOUT_S:g} s while the lock was held"
    assert holder.holding(), "the holder let go before the call answered"
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def _hold(kind: str, path: str) -> object:
    if kind == "write":
        import sqlite3

        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        return conn
    if kind == "flock":
        import fcntl
        import os

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    if kind == "milvus":
        import time

        from pymilvus import MilvusClient

        deadline = time.monotonic() + 60
        while True:  # the test process may still be letting go of it
            try:
                return MilvusClient(uri=path)
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    raise SystemExit(f"unknown lock kind {kind!r}")


if __name__ == "__main__":
    held = _hold(sys.argv[1], sys.argv[2])
    print("held", flush=True)
    sys.stdin.readline()  # "release", or end of input when the test process died
