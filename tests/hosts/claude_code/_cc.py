"""Claude Code's hook command run as Claude Code runs it, and the engines it starts.

``Hooks.call`` runs ``python -I -S hook.py`` with a hook input on stdin, the
way the installed hooks do; the engine it starts is a real process, found
(and counted) by its command line and its ``MEMLANE_HOME``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import memlane
from helpers import engine_pids, stop_engines, wait_for
from memlane.core import link

HOOK = Path(memlane.__file__).parent / "hosts" / "claude_code" / "hook.py"
SRC = Path(memlane.__file__).parent.parent
__all__ = ["engine_pids"]


def memlane_pids(home: Path) -> list[int]:
    """Every process (engine, hook, anything memlane started) with *home* in its environment."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and f"MEMLANE_HOME={home}".encode() in environ:
            found.append(int(entry))
    return found


class Hooks:
    """The hook command for one MEMLANE_HOME and one project."""

    def __init__(self, home: Path, project: Path, **env: str) -> None:
        self.home = home
        self.project = project
        self.env = {
            **os.environ,
            "MEMLANE_HOME": str(home),
            "PYTHONPATH": str(SRC),
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMLANE_LLM_PROVIDER": "none",
            "MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50",
            "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
            "MEMLANE_SESSIONS_ENABLED": "off",
            **env,
        }

    def payload(self, event: str, session_id: str, **fields: Any) -> dict[str, Any]:
        return {
            "hook_event_name": event,
            "session_id": session_id,
            "transcript_path": str(self.project / f"{session_id}.jsonl"),
            "cwd": str(self.project),
            **fields,
        }

    def start(
        self, event: str, session_id: str, env: dict[str, str] | None = None, **fields: Any
    ) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(HOOK)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**self.env, **(env or {})},
            cwd=self.project,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(self.payload(event, session_id, **fields)).encode())
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() only reads
        return proc

    def call(
        self, event: str, session_id: str, env: dict[str, str] | None = None, **fields: Any
    ) -> dict[str, Any] | None:
        """Run one hook call: its output (None when it printed nothing); it must exit 0."""
        return finish(self.start(event, session_id, env, **fields))

    def place(self) -> link.Place:
        """Where the hooks' engine keeps its files (its key is of the hooks' environment)."""
        return link.Place(str(self.home), link.engine_key(self.env))

    def failures(self) -> list[dict[str, Any]]:
        path = self.home / "engine" / "client-failures.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def stop_engines(self) -> None:
        """SIGTERM every engine of this home, SIGKILL what is left after 20 s."""
        stop_engines(self.home)

    def wait_engine_gone(self, timeout: float = 30.0) -> None:
        wait_for(lambda: not engine_pids(self.home), timeout, "the engine exits")


def finish(proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert not err, err.decode()
    if not out.strip():
        return None
    answer = json.loads(out)
    assert isinstance(answer, dict)
    return answer


def daily_text(project: Path) -> str:
    """Every daily file of the project's store (the system clock names them)."""
    store = project / ".memsearch" / "memory"
    if not store.is_dir():
        return ""
    return "".join(p.read_text(encoding="utf-8") for p in sorted(store.glob("*.md")))
