"""The Claude Code default against the real ``claude`` binary (npm
``@anthropic-ai/claude-code`` 2.1.x), talking to a fake Messages API on
127.0.0.1: memlane's child ``claude -p`` asks for haiku, runs none of the
user's hooks (a hook in the temp HOME's settings would leave a marker) and
leaves no transcript in ``~/.claude/projects/``.

Skipped, saying why, when no ``claude`` binary is installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from helpers import NOW, FixedClock
from memlane.core.settings import LlmSettings
from memlane.llm.budget import BudgetedLLM
from memlane.llm.claude_code import ClaudeCodeLLM
from memlane.llm.factory import make_llm

# Where the e2e lane installs Claude Code when it is not on PATH, under the
# install lock it shares with every copy of the suite on this machine.
CACHE = Path.home() / ".cache/memlane-e2e"
INSTALLED = CACHE / "claude-code-2/node_modules/@anthropic-ai"


def _claude_binary() -> Path | None:
    """``claude`` on PATH, else the e2e lane's: the package's ``bin/claude.exe`` once
    its postinstall linked it (before that it is a small placeholder script), else
    the platform package's own binary; only one that runs.

    Chosen under the e2e lane's install lock, and run once: another copy of the
    suite may be installing it right now, and a half-written binary fails to
    exec. A binary that runs is never rewritten (the lane reinstalls only a
    missing or wrong version)."""
    found = shutil.which("claude")
    if found:
        return Path(found)
    if not INSTALLED.is_dir():
        return None
    with (CACHE / ".install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        candidates = [INSTALLED / "claude-code" / "bin" / "claude.exe"]
        candidates += sorted(INSTALLED.glob("claude-code-*/claude"))
        for candidate in candidates:
            if candidate.is_file() and candidate.stat().st_size > 1_000_000 and _runs(candidate):
                return candidate
    return None


def _runs(binary: Path) -> bool:
    try:
        out = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DISABLE_AUTOUPDATER": "1"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


class _Messages(BaseHTTPRequestHandler):
    """A scripted ``POST /v1/messages`` that streams one text answer with usage."""

    requests: ClassVar[list[dict[str, Any]]] = []
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        type(self).requests.append({"path": self.path, "body": body})
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 321, "output_tokens": 1},
        }
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "- the cache moved to Redis"},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 9},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        data = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def messages_api() -> Iterator[str]:
    _Messages.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Messages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.subprocess
def test_the_real_claude_child_asks_for_haiku_runs_no_hooks_and_keeps_no_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, messages_api: str
) -> None:
    binary = _claude_binary()
    if binary is None:
        pytest.skip(f"no claude binary on PATH or in {INSTALLED}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(binary)
    home = tmp_path / "home"
    marker = home / "a-hook-ran"
    hook = {"hooks": [{"type": "command", "command": f"echo ran >> {marker}"}]}
    events = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {e: [hook] for e in events}})
    )
    for name, value in {
        "HOME": str(home),
        # Claude Code's own directory (the suite points it into MEMLANE_HOME).
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANTHROPIC_BASE_URL": messages_api,
        "ANTHROPIC_API_KEY": "fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }.items():
        monkeypatch.setenv(name, value)

    llm = make_llm(LlmSettings(), host="claude-code", clock=FixedClock(NOW))
    assert isinstance(llm, BudgetedLLM) and isinstance(llm.inner, ClaudeCodeLLM)
    answer = llm.complete("You distil exchanges into bullets.", "user: cache?\nassistant: Redis")

    assert answer == "- the cache moved to Redis"
    assert _Messages.requests, "the child never reached the fake Messages API"
    asked = _Messages.requests[-1]["body"]
    assert "haiku" in str(asked.get("model"))
    assert not asked.get("tools")  # --tools "": the child can do nothing but answer
    assert "You distil exchanges into bullets." in json.dumps(asked.get("system"))
    assert "user: cache?" in json.dumps(asked.get("messages"))
    assert not marker.exists(), "one of the user's hooks ran in the child"
    assert (home / ".claude.json").exists() or (home / ".claude" / ".claude.json").exists(), (
        "the child did not run with the temp HOME"
    )
    transcripts = list((home / ".claude" / "projects").rglob("*.jsonl"))
    assert transcripts == [], "the child left a transcript in ~/.claude/projects"
    # The usage claude reported (input 321, output 9) is what the budget counted.
    usage = json.loads((Path(os.environ["MEMLANE_HOME"]) / "llm-usage.json").read_text())
    assert (usage["tokens_reported"], usage["tokens_estimated"]) == (330, 0)
