"""A side-channel trace log for ingestion and sweep (``MEMLANE_TRACE``).

pi-lcm-memory's PI_LCM_MEMORY_TRACE, memlane-style: when a sidecar seems to
hang, the in-database diagnostics may be exactly what cannot be written, so
each event is one line appended with ``os.write`` on an ``O_APPEND``
descriptor (no Python buffering, no lock to deadlock on; lines from several
processes interleave whole). Every line carries the pid and thread name.

``MEMLANE_TRACE=1`` writes to ``$MEMLANE_HOME/trace.log``; any other
non-empty value except ``0`` is taken as the log's path.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from memlane.core.clock import SYSTEM_CLOCK, utc_z_millis
from memlane.core.paths import memlane_home

TRACE_ENV = "MEMLANE_TRACE"
TRACE_FILENAME = "trace.log"

_lock = threading.Lock()
_state: dict[str, object] = {}


_forced = threading.Event()


def force_on() -> None:
    """Trace to the default file even without ``MEMLANE_TRACE`` (``sessions.debug``)."""
    _forced.set()


def trace_path() -> Path | None:
    """Where traces go, or None when tracing is off."""
    raw = os.environ.get(TRACE_ENV, "").strip()
    if not raw and _forced.is_set():
        return memlane_home() / TRACE_FILENAME
    if not raw or raw.lower() in ("0", "false", "off", "no"):
        return None
    if raw.lower() in ("1", "true", "on", "yes"):
        return memlane_home() / TRACE_FILENAME
    return Path(raw).expanduser()


def enabled() -> bool:
    return trace_path() is not None


def _descriptor(path: Path) -> int | None:
    # Re-opened when the path changes (tests switch MEMLANE_HOME) or after a
    # fork (the pid in every line must be the writer's own).
    key = (str(path), os.getpid())
    with _lock:
        if _state.get("key") == key:
            fd = _state.get("fd")
            return fd if isinstance(fd, int) else None
        old = _state.get("fd")
        if isinstance(old, int) and _state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                os.close(old)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            _state.update(key=key, fd=None, pid=os.getpid())
            return None
        _state.update(key=key, fd=fd, pid=os.getpid())
        return fd


def trace(source: str, event: str, **fields: object) -> None:
    """Append one line ``<utc time> pid=<pid> src=<source>/<thread> <event> k=v ...``.

    Never raises: tracing must not be the thing that breaks ingestion.
    """
    path = trace_path()
    if path is None:
        return
    fd = _descriptor(path)
    if fd is None:
        return
    stamp = utc_z_millis(SYSTEM_CLOCK.now())
    parts = [
        stamp,
        f"pid={os.getpid()}",
        f"src={source}/{threading.current_thread().name}",
        event,
    ]
    parts += [f"{key}={_shown(value)}" for key, value in fields.items()]
    line = " ".join(parts).replace("\n", "\\n") + "\n"
    with contextlib.suppress(OSError):
        os.write(fd, line.encode("utf-8", "replace"))


def _shown(value: object) -> str:
    text = str(value)
    return text if len(text) <= 300 else text[:300] + "…"
