"""Which Claude Code sessions run in a project: written by the engine, read by ``memlane mcp``.

Claude Code starts ``memlane mcp`` in the project without telling it which
session it serves, yet ``memory_write`` should anchor its entry to that
session (``session:<id> transcript:<path>``) so ``memory_transcript`` can
follow it. The engine records each session its hooks report, per project,
with the pid of the Claude Code process that ran the hook. The MCP server
picks, in order: the session named by ``CLAUDE_CODE_SESSION_ID`` when
Claude Code sets it and a hook recorded it running; the latest session of
the Claude Code process that started the server (its parent); the session
``CLAUDE_CODE_SESSION_ID`` names, its transcript found where Claude Code
keeps them; else none (a server another MCP client started anchors nothing).
Claude Code 2.1 sets ``CLAUDE_CODE_SESSION_ID`` in the environment of the
MCP servers it starts (and runs hooks through ``sh``, so a hook's parent is
a shell whose parent is Claude Code).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.clock import SYSTEM_CLOCK
from memlane.core.paths import memlane_home
from memlane.core.process import pid_alive

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
#: Programs that may stand between Claude Code and a process it starts.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish"})
#: How stale the record of a running session may get ("latest" is to this precision).
REFRESH_S = 10.0
_lock = threading.Lock()
_noted: dict[tuple[str, str], tuple[str | None, int | None, float]] = {}


def records_dir() -> Path:
    # The engine's directory (hosts/claude_code/hook.py's engine_dir).
    return memlane_home() / "claude-code" / "running"


def _path(collection: str) -> Path:
    return records_dir() / f"{collection}.json"


def _read(collection: str) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_path(collection).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    sessions = data.get("sessions") if isinstance(data, dict) else None
    return {k: v for k, v in sessions.items() if isinstance(v, dict)} if sessions else {}


def claude_pid(pid: int) -> int:
    """*pid*, or its first ancestor that is not a shell (Claude Code runs hooks through one)."""
    for _ in range(4):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return pid
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name not in _SHELLS:
            return pid
        pid = int(stat[stat.rfind(")") + 2 :].split()[1])
    return pid


def note(collection: str, session_id: str, transcript: str | None, pid: int | None) -> None:
    """Session *session_id* of this project is running (a hook of it just ran).

    Written again only when it changed or ``REFRESH_S`` passed: every prompt
    notes its session, and a prompt should not wait for a file write.
    """
    key = (collection, session_id)
    now = time.monotonic()
    with _lock:
        last = _noted.get(key)
        if last is not None and last[:2] == (transcript, pid) and now - last[2] < REFRESH_S:
            return
        _noted[key] = (transcript, pid, now)
        sessions = _read(collection)
        sessions[session_id] = {
            "transcript": transcript,
            "pid": pid,
            "seen": SYSTEM_CLOCK.now().timestamp(),
            "ended": False,
        }
        # Keep the record small: ended and dead sessions go, the newest stay.
        alive = {
            k: v
            for k, v in sessions.items()
            if not v.get("ended") and (not isinstance(v.get("pid"), int) or pid_alive(v["pid"]))
        }
        _save(collection, alive)


def recorded_pid(collection: str, session_id: str) -> int | None:
    """The Claude Code process recorded for *session_id* (this engine's note first:
    the file drops dead processes' sessions whenever another session is noted)."""
    with _lock:
        noted = _noted.get((collection, session_id))
    pid = noted[1] if noted is not None else _read(collection).get(session_id, {}).get("pid")
    return pid if isinstance(pid, int) else None


def ended(collection: str, session_id: str) -> None:
    with _lock:
        _noted.pop((collection, session_id), None)
        sessions = _read(collection)
        if session_id in sessions:
            sessions.pop(session_id)
            _save(collection, sessions)


def _save(collection: str, sessions: dict[str, dict[str, Any]]) -> None:
    path = _path(collection)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Which sessions run now: a crash of the machine ends them anyway, so no fsync
    # (a SessionStart hook waits for this write).
    write_atomic(path, json.dumps({"sessions": sessions}, sort_keys=True) + "\n", durable=False)


def current(
    collection: str,
    *,
    parent_pid: int | None = None,
    wanted: str | None = None,
    cwd: str | None = None,
) -> tuple[str, str | None] | None:
    """(session id, transcript path) of the Claude Code session a client serves, or None.

    ``parent_pid``: the process that started the client (``memlane mcp``);
    ``wanted``: the ``CLAUDE_CODE_SESSION_ID`` it was started with; ``cwd``: its
    directory. None for a client Claude Code did not start (its parent is none
    of the recorded Claude Code processes and it names no session): another
    MCP client's entry must not pass for part of a Claude Code session.
    """
    sessions = _read(collection)
    live = {
        k: v
        for k, v in sessions.items()
        if not isinstance(v.get("pid"), int) or pid_alive(v["pid"])
    }
    if wanted and wanted in live:
        return wanted, live[wanted].get("transcript")
    if parent_pid is not None:
        claude = claude_pid(parent_pid)
        mine = [(float(v.get("seen") or 0), k) for k, v in live.items() if v.get("pid") == claude]
        if mine:
            _, session_id = max(mine)
            return session_id, live[session_id].get("transcript")
    if not wanted:
        return None
    # Claude Code names its session but no hook reported it (hooks not
    # installed, or not run yet): its transcript is where Claude Code keeps them.
    from memlane.transcripts.locate import claude_project_dir

    transcript = claude_project_dir(cwd or os.getcwd()) / f"{wanted}.jsonl"
    return wanted, str(transcript) if transcript.is_file() else None
