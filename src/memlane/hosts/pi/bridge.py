"""``memlane sidecar``'s relay: pi's stdio to the warm engine's socket, byte for byte.

Imports nothing but the standard library and core/link.py: pi waits for
nothing at session start, but every millisecond here is one more before the
first prompt can have its memory. The relay reads no message; the engine
speaks the sidecar protocol on the connection (hosts/server/rpc.py) and may
ask pi's model to distil (``llm.complete``) on the same connection.

On pi's EOF the relay half-closes the connection, the engine ends the
session (captures written on its own threads) and hangs up, and the relay
exits; when the engine hangs up first (stopped, killed), the relay exits and
pi starts a new one, which reaches a new engine.
"""

from __future__ import annotations

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
    caller then serves the protocol itself)."""
    place = link.Place()
    started = time.monotonic()
    for attempt in range(2):
        try:
            sock = link.reach(place, started + REACH_S)
        except link.EngineUnavailable as exc:
            what = "slow" if isinstance(exc, link.EngineSlow) else "failed"
            link.record_failure(
                place, CLIENT, "session", what, str(exc), time.monotonic() - started
            )
            return None
        sock.settimeout(None)
        try:
            sock.sendall(link.rpc_header(CLIENT, directory))
            break
        except OSError:
            # An engine that was going away as we reached it: reach again once
            # (a new one starts); pi has sent nothing it could lose yet.
            sock.close()
            if attempt:
                return None
    threading.Thread(target=_to_engine, args=(sock,), name="memlane-relay", daemon=True).start()
    try:
        while chunk := sock.recv(65536):
            _write_all(1, chunk)
    except OSError:
        pass  # the engine is gone: pi's next call starts another relay
    finally:
        sock.close()
    return 0


def _to_engine(sock: object) -> None:
    import _socket

    assert isinstance(sock, _socket.socket)
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
