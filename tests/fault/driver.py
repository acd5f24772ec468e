"""One fault scenario's operations, run in this process (the harness kills it).

``python driver.py PROJECT ACKS OPS_JSON``: each operation of the JSON list
runs through memlane's real code (the CLI's ``main``, or a ``Session`` for
captures, as the sidecar drives it), and each one memlane *acknowledged* is
appended to the file ACKS as ``<op id>`` on its own line: exit status 0 for
a command, ``queued: true`` for a capture, a finished flush for a shutdown.
The harness then knows exactly which writes were promised when the process
died, and checks that every one of them survived.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def _ack(acks: Path, op_id: str) -> None:
    # O_APPEND, one write: the line reaches the page cache before the next
    # step, so a SIGKILL right after it cannot lose it.
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{op_id}\n".encode())
    finally:
        os.close(fd)


def _cli(project: Path, op: dict[str, Any]) -> bool:
    """Run one command; True when its exit status is one the op accepts
    (``ok_codes``, default 0: a recovery step may accept "not found")."""
    from memlane.cli.main import main

    stdin = op.get("stdin")
    if stdin is not None:
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
    try:
        code = main(["-C", str(project), *op["args"]])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code in op.get("ok_codes", [0])


def _capture(project: Path, op: dict[str, Any], acks: Path) -> None:
    from memlane.core.types import Exchange
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory

    mem = Memory.open(project)
    session = Session.open(mem, host="test", session_id=op["session"])
    # What a dead process left is taken over in the background.
    if op.get("wait_recovery") and not session.internals.wait_recovery(60):
        raise SystemExit("the capture recovery did not finish within 60 s")
    for exchange in op["exchanges"]:
        queued = session.agent_settled(
            Exchange(
                user=exchange["user"],
                assistant=exchange["assistant"],
                entry_id=exchange["id"],
                session_id=op["session"],
            )
        )
        if queued.queued:
            _ack(acks, exchange["id"])
    if op.get("shutdown", True):
        session.shutdown()
        _ack(acks, op["id"])


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _capture_many(project: Path, op: dict[str, Any], acks: Path) -> None:
    """*n* exchanges through one session, at most *window* in flight (an
    agent does not settle turns faster than memlane distils them); the
    process's RSS recorded every *every* exchanges as ``rss <n> <KiB>``."""
    import time

    from memlane.core.types import Exchange
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory

    mem = Memory.open(project)
    session = Session.open(mem, host="test", session_id=op["session"])
    n, window, every = op["n"], op.get("window", 8), op.get("every", 500)
    for i in range(n):
        while session.internals.pending_captures >= window:
            time.sleep(0.002)
        queued = session.agent_settled(
            Exchange(
                user=f"soak question {i}: how is setting {i} of the build configured?",
                assistant=f"setting {i} is configured in build.toml under section s{i}",
                entry_id=f"q{i}",
                session_id=op["session"],
            )
        )
        if queued.queued:
            _ack(acks, f"q{i}")
        if (i + 1) % every == 0:
            _ack(acks, f"rss {i + 1} {_rss_kib()}")
    session.shutdown()
    _ack(acks, op["id"])


def main(argv: list[str]) -> int:
    project, acks, ops = Path(argv[1]), Path(argv[2]), json.loads(argv[3])
    for op in ops:
        if op["kind"] == "cli":
            if _cli(project, op):
                _ack(acks, op["id"])
        elif op["kind"] == "capture":
            _capture(project, op, acks)
        elif op["kind"] == "capture_many":
            _capture_many(project, op, acks)
        else:
            raise SystemExit(f"unknown operation kind {op['kind']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
