"""Run the real Claude Code headless (``claude -p``) against the scripted fake Messages API.

``ensure_claude(cache)`` installs ``@anthropic-ai/claude-code`` (its native
binary comes in a per-platform optional package) from the npm registry into
``<cache>/claude-code-2``, once, under the cache's install lock (shared with
``pi_harness.py``); later runs reuse it. ``NpmUnavailable`` (the tests skip)
only when the registry cannot be reached.

``ClaudeWorld`` is one isolated Claude Code setup in a temp dir: a ``HOME``
(where Claude Code keeps ``.claude/`` and ``.claude.json``), a project (a git
root), a ``MEMLANE_HOME``, and memlane installed by ``memlane install
claude-code``'s own code (the plugin mode by default). ``ClaudeWorld.run``
runs one prompt with ``--output-format json`` and returns its result;
``ClaudeWorld.stop_engine`` ends the world's engine (fixtures call it at the end).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env import agent_env
from npm_cli import ensure_cli

from helpers import make_project, stop_engines

CLAUDE_PACKAGE = "@anthropic-ai/claude-code@2.1.332"
CLAUDE_VERSION = "2.1.332"
RUN_TIMEOUT_S = 120
MEMLANE = str(Path(sys.executable).parent / "memlane")


@dataclass(frozen=True)
class ClaudeInstall:
    exe: Path
    version: str


def _version(exe: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(exe), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DISABLE_AUTOUPDATER": "1"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout.strip() else None


def _binary(target: Path) -> Path | None:
    """The claude executable: the package's ``bin/claude.exe`` once its postinstall
    linked it, else the platform package's own binary."""
    modules = target / "node_modules" / "@anthropic-ai"
    candidates = [modules / "claude-code" / "bin" / "claude.exe"]
    candidates += sorted(modules.glob("claude-code-*/claude"))
    for candidate in candidates:
        if candidate.is_file() and candidate.stat().st_size > 1_000_000:
            return candidate
    return None


def ensure_claude(cache: Path) -> ClaudeInstall:
    """Claude Code installed under *cache*, reused between runs."""
    found, version = ensure_cli(
        cache,
        directory="claude-code-2",
        package=CLAUDE_PACKAGE,
        version=CLAUDE_VERSION,
        find_binary=_binary,
        version_of=_version,
    )
    return ClaudeInstall(found, version)


@dataclass
class RunResult:
    returncode: int
    result: dict[str, Any]
    stdout: str
    stderr: str
    seconds: float

    @property
    def text(self) -> str:
        return str(self.result.get("result", ""))

    @property
    def session_id(self) -> str:
        return str(self.result.get("session_id", ""))


@dataclass
class ClaudeWorld:
    claude: ClaudeInstall
    root: Path
    base_url: str
    env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.memlane_home = self.root / "mh"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project = make_project(self.root, "project")
        self.plugin_dir = self.memlane_home / "claude-code" / "plugin"

    # -- memlane in Claude Code ----------------------------------------------

    def install(self, *, mode: str = "plugin", project: bool = False) -> list[str]:
        from memlane.hosts.claude_code.install import install

        report = install(
            self.project if project else None,
            mode=mode,
            env={"HOME": str(self.home)},
            python=sys.executable,
            memlane=MEMLANE,
            plugin_dir=self.plugin_dir,
        )
        return report.lines

    def uninstall(self, *, project: bool = False) -> list[str]:
        from memlane.hosts.claude_code.install import uninstall

        return uninstall(self.project if project else None, env={"HOME": str(self.home)}).lines

    def trust_project(self) -> None:
        """What accepting Claude Code's trust dialog in the project records."""
        path = self.home / ".claude.json"
        state = json.loads(path.read_text()) if path.exists() else {}
        state.setdefault("projects", {}).setdefault(str(self.project), {})[
            "hasTrustDialogAccepted"
        ] = True
        path.write_text(json.dumps(state, indent=2))

    # -- running claude ------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = agent_env(
            ("ANTHROPIC_", "CLAUDE", "MEMLANE_", "OPENAI_"),
            HOME=str(self.home),
            MEMLANE_HOME=str(self.memlane_home),
            ANTHROPIC_BASE_URL=self.base_url,
            ANTHROPIC_API_KEY="sk-ant-fake",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
        )
        env.update(self.env_extra)
        env.update(extra)
        return env

    def run(
        self, prompt: str, *args: str, timeout_s: float = RUN_TIMEOUT_S, **env: str
    ) -> RunResult:
        start = time.monotonic()
        out = subprocess.run(
            [str(self.claude.exe), "-p", prompt, "--output-format", "json", *args],
            cwd=self.project,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        try:
            result = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
        except ValueError:
            result = {}
        return RunResult(out.returncode, result, out.stdout, out.stderr, time.monotonic() - start)

    def transcript(self, session_id: str) -> Path:
        from memlane.transcripts.locate import claude_project_dir

        directory = claude_project_dir(str(self.project), {"HOME": str(self.home)})
        return directory / f"{session_id}.jsonl"

    def daily_files(self) -> list[Path]:
        return sorted((self.project / ".memsearch" / "memory").glob("????-??-??.md"))

    def memory_text(self) -> str:
        return "\n".join(p.read_text(encoding="utf-8") for p in self.daily_files())

    def engine_log(self) -> str:
        logs = sorted((self.memlane_home / "engine").glob("*.log"))
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs)

    def stop_engine(self, timeout_s: float = 20) -> None:
        """End this world's memlane engine (it would idle for minutes): SIGTERM, then SIGKILL."""
        stop_engines(self.memlane_home, timeout_s)

    def hook_failures(self) -> list[dict[str, Any]]:
        path = self.memlane_home / "engine" / "client-failures.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
