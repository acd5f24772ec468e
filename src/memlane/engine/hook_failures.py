"""The hook calls that failed or were too slow, for ``memlane status``.

Claude Code's hook client (hosts/claude_code/hook.py) never fails a
session: a call that errs or passes its time limit prints nothing and
appends one JSON line (``event``, ``what``: ``failed`` or ``slow``,
``detail``, ``took_ms``) to ``hook-failures.jsonl`` in its directory under
``MEMLANE_HOME``. The client imports nothing from memlane, so the path rule
is written twice: here and there (a test holds them equal). The client
reads no clock of memlane's, so the time of the last failure is the file's
modification time.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane.core.paths import memlane_home

#: Only the last lines are read: the file only grows while hooks keep failing.
TAIL_BYTES = 256 * 1024


def failures_path() -> Path:
    return memlane_home() / "claude-code" / "hook-failures.jsonl"


def summary(path: Path | None = None) -> dict[str, Any] | None:
    """Counts of failed and slow hook calls and the last one; None when there were none."""
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
        last = record
    if last is None:
        return None
    return {**counts, "last": last, "last_at": modified, "log": str(path)}


def status_line(hooks: dict[str, Any]) -> str:
    """e.g. ``2 failed, 1 slow (last: UserPromptSubmit 14:05, timed out)``."""
    last = hooks.get("last") or {}
    at = hooks.get("last_at")
    when = (
        datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M")
        if isinstance(at, int | float)
        else "?"
    )
    detail = str(last.get("detail") or last.get("what") or "")
    return (
        f"{hooks.get('failed', 0)} failed, {hooks.get('slow', 0)} slow "
        f"(last: {last.get('event', '?')} {when}, {detail}; see {hooks.get('log')})"
    )
