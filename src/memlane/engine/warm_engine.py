"""The warm engine as ``memlane status`` reports it: is it running, and did clients fail open.

Every thin client (Claude Code's hook command, ``memlane mcp``, pi's
``memlane sidecar``, the CLI) that cannot reach the engine within its budget
goes on without it and appends one JSON line (``client``, ``event``,
``what``: ``failed`` or ``slow``, ``detail``, ``took_ms``, ``at``) to the
engine directory's ``client-failures.jsonl`` (core/link.py). The engine
writes what it is (pid, start, socket, log) to ``<key>.json`` while it runs.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.core import link
from memlane.core.process import pid_alive, rss_mb

#: Only the last lines are read: the file only grows while clients keep failing.
TAIL_BYTES = 256 * 1024


def failures_path() -> Path:
    return Path(link.Place().failures)


def summary(path: Path | None = None) -> dict[str, Any] | None:
    """Counts of failed and slow client calls, per client, and the last one; None
    when there were none."""
    path = path or failures_path()
    try:
        with path.open("rb") as handle:
            modified = os.fstat(handle.fileno()).st_mtime
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError:
        return None
    counts = {"failed": 0, "slow": 0}
    clients: dict[str, int] = {}
    last: dict[str, Any] | None = None
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        what = "slow" if record.get("what") == "slow" else "failed"
        counts[what] += 1
        client = str(record.get("client") or "claude-code hook")
        clients[client] = clients.get(client, 0) + 1
        last = record
    if last is None:
        return None
    return {**counts, "clients": clients, "last": last, "last_at": modified, "log": str(path)}


def status_line(failures: dict[str, Any]) -> str:
    """e.g. ``2 failed, 1 slow (last: claude-code hook UserPromptSubmit 14:05, timed out)``."""
    last = failures.get("last") or {}
    at = failures.get("last_at")
    when = (
        datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M")
        if isinstance(at, int | float)
        else "?"
    )
    detail = str(last.get("detail") or last.get("what") or "")
    who = str(last.get("client") or "claude-code hook")
    return (
        f"{failures.get('failed', 0)} failed, {failures.get('slow', 0)} slow "
        f"(last: {who} {last.get('event', '?')} {when}, {detail}; see {failures.get('log')})"
    )


def engine_info(now: float) -> dict[str, Any]:
    """The engine of this home and environment: ``running`` with its pid, time up
    (as of *now*, a timestamp), socket and memory in use, or why not."""
    if link.engine_disabled():
        return {"running": False, "off": True}
    place = link.Place()
    if os.path.isdir(place.directory) and not link.private_dir(place.directory):
        return {
            "running": False,
            "refused": f"{place.directory} may be written by other users: no client uses "
            "an engine there; remove it (memlane makes it again, private)",
        }
    try:
        info = json.loads(Path(place.info).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"running": False, "log": place.log}
    pid = info.get("pid") if isinstance(info, dict) else None
    if not isinstance(pid, int) or not pid_alive(pid):
        return {"running": False, "log": place.log}
    started = info.get("started_at")
    up = round(now - started, 1) if isinstance(started, int | float) else None
    return {**info, "running": True, "uptime_s": up, "rss_mb": rss_mb(pid)}


def engine_line(info: dict[str, Any]) -> str:
    if info.get("off"):
        return f"off ({link.ENGINE_SWITCH_ENV}=off): every client works in its own process"
    if info.get("refused"):
        return f"refused: {info['refused']}"
    if not info.get("running"):
        return "not running (the first agent session or MCP client starts it)"
    uptime = info.get("uptime_s")
    up = _duration(uptime) if isinstance(uptime, int | float) else "?"
    rss = info.get("rss_mb")
    memory = f", {rss:.0f} MB" if isinstance(rss, int | float) else ""
    return f"running (pid {info['pid']}, up {up}{memory}; log {info.get('log')})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
