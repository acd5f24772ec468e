"""``memlane sidecar``'s relay: pi's stdio to the warm engine's socket, byte for byte.

Imports nothing but the standard library and core/link.py: pi waits for
nothing at session start, but every millisecond here is one more before the
first prompt can have its memory. The relay reads no message; the engine
speaks the sidecar protocol on the connection (hosts/server/rpc.py) and may
ask pi's model to distil (``llm.complete``) on the same connection.

pi may start the relay before its session does (while pi itself is still
starting, so the process start is not waited for later): a running engine
is connected to at once, but none is started until pi speaks, and a relay
whose pi goes away without a word exits without ever starting one.

On pi's EOF the relay half-closes the connection, the engine ends the
session (captures written on its own threads) and hangs up, and the relay
exits; when the engine hangs up first (stopped, killed), the relay exits and
pi starts a new one, which reaches a new engine.
"""

from __future__ import annotations

import _socket
import contextlib
import os
import threading
import time

from memlane.core import link

CLIENT = "pi"
#: How long the relay waits for an engine to start (a cold start on a busy
#: two-core machine takes seconds). pi does not wait for it: its first prompt
#: goes on without memory when the engine is not there yet.
REACH_S = 30.0


def relay(directory: str) -> int | None:
    """Relay until either side closes; None when no engine could be reached (the
    caller then serves the protocol itself, from what pi sent so far)."""
    if link.engine_disabled():
        return None  # MEMLANE_ENGINE=off: served in this process, as asked
    place = link.Place()
    first = b""
    sock = _connect(place, directory, start=False)
    if sock is None:
        # No engine runs: start one only once pi speaks.
        first = os.read(0, 65536)
        if not first:
            return 0  # pi went away before its session started
        sock = _connect(place, directory, start=True)
        if sock is None:
            from memlane.hosts.pi.replay import replay_stdin

            replay_stdin(first)
            return None
    try:
        if first:
            sock.sendall(first)
    except OSError:
        sock.close()
        return 0  # the engine went away at once: pi's next call starts another relay
    threading.Thread(target=_to_engine, args=(sock,), name="memlane-relay", daemon=True).start()
    try:
        while chunk := sock.recv(65536):
            _write_all(1, chunk)
    except OSError:
        pass  # the engine is gone: pi's next call starts another relay
    finally:
        sock.close()
    return 0


def _connect(place: link.Place, directory: str, *, start: bool) -> _socket.socket | None:
    """A connection to the engine, its header sent; with *start*, starting the
    engine when none runs (a failure is recorded for ``memlane status``)."""
    started = time.monotonic()
    for attempt in range(2):
        try:
            sock = link.reach(place, started + REACH_S, start=start)
        except link.EngineUnavailable as exc:
            if start:
                what = "slow" if isinstance(exc, link.EngineSlow) else "failed"
                took = time.monotonic() - started
                link.record_failure(place, CLIENT, "session", what, str(exc), took)
            return None
        sock.settimeout(None)
        try:
            sock.sendall(link.rpc_header(CLIENT, directory))
            return sock
        except OSError:
            # An engine that was going away as we reached it: reach again once
            # (a new one starts); pi has sent nothing it could lose yet.
            sock.close()
            if attempt or not start:
                return None
    return None


def _to_engine(sock: _socket.socket) -> None:
    try:
        while chunk := os.read(0, 65536):
            sock.sendall(chunk)
    except OSError:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(_socket.SHUT_WR)  # pi is done: the engine ends its session


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
