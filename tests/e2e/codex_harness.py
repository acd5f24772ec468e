"""Run the real Codex CLI (``codex exec``) against the fake Responses API (tests/fake_responses.py).

``ensure_codex(cache)`` installs ``@openai/codex`` (its native binary comes
in a per-platform optional package) from the npm registry into
``<cache>/codex-0``, once, under the cache's install lock (shared with
pi_harness.py); later runs reuse it. ``NpmUnavailable`` (the tests skip)
only when the registry cannot be reached.

``CodexWorld`` is one isolated Codex setup in a temp dir: a ``HOME`` whose
``.codex/config.toml`` names the fake model provider (``wire_api =
"responses"``, its key from an environment variable), a project (a git
root), a ``MEMLANE_HOME``, and memlane installed by ``memlane install
codex``'s own code. ``CodexWorld.run`` runs one ``codex exec`` prompt.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env import agent_env
from npm_cli import ensure_cli

from helpers import make_project, stop_engines

CODEX_PACKAGE = "@openai/codex@0.171.0"
CODEX_VERSION = "0.171.0"
RUN_TIMEOUT_S = 120
MEMLANE = str(Path(sys.executable).parent / "memlane")
#: The user's own Codex configuration, before memlane: the fake provider.
PROVIDER_CONFIG = """\
model = "fake-model"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
"""


@dataclass(frozen=True)
class CodexInstall:
    exe: Path
    version: str


def _version(exe: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(exe), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()
    return words[-1] if out.returncode == 0 and words else None


def _binary(target: Path) -> Path | None:
    """The native codex executable of the platform package."""
    modules = target / "node_modules" / "@openai"
    for candidate in sorted(modules.glob("codex-*/vendor/*/bin/codex")):
        if candidate.is_file() and candidate.stat().st_size > 1_000_000:
            return candidate
    return None


def ensure_codex(cache: Path) -> CodexInstall:
    """The Codex CLI installed under *cache*, reused between runs."""
    found, version = ensure_cli(
        cache,
        directory="codex-0",
        package=CODEX_PACKAGE,
        version=CODEX_VERSION,
        find_binary=_binary,
        version_of=_version,
    )
    return CodexInstall(found, version)


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def session_id(self) -> str:
        for line in self.stderr.splitlines():
            if line.startswith("session id:"):
                return line.split(":", 1)[1].strip()
        return ""


@dataclass
class CodexWorld:
    codex: CodexInstall
    root: Path
    base_url: str
    env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.codex_home = self.home / ".codex"
        self.memlane_home = self.root / "mh"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.project = make_project(self.root, "project")
        self.config = self.codex_home / "config.toml"
        self.config.write_text(PROVIDER_CONFIG.format(base_url=self.base_url))

    def memlane_env(self) -> dict[str, str]:
        """What the user has set (the shell install and codex run in): the same for
        every run, so the hooks and the MCP server reach one engine (the suite's
        per-test PI_CODING_AGENT_DIR and CLAUDE_CONFIG_DIR would key another)."""
        return {
            "HOME": str(self.home),
            "MEMLANE_HOME": str(self.memlane_home),
            "PI_CODING_AGENT_DIR": str(self.home / ".pi" / "agent"),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            **{k: v for k, v in self.env_extra.items() if k.startswith("MEMLANE_")},
        }

    def install(self) -> list[str]:
        from memlane.hosts.codex.install import install

        return install(self.memlane_env(), python=sys.executable, memlane=MEMLANE).lines

    def uninstall(self) -> list[str]:
        from memlane.hosts.codex.install import uninstall

        return uninstall(self.memlane_env()).lines

    def env(self, **extra: str) -> dict[str, str]:
        env = agent_env(("CODEX", "MEMLANE_", "OPENAI_"), **self.memlane_env())
        env.update(FAKE_OPENAI_KEY="sk-fake")
        env.update(self.env_extra)
        env.update(extra)
        return env

    def run(
        self, prompt: str, *args: str, timeout_s: float = RUN_TIMEOUT_S, **env: str
    ) -> RunResult:
        start = time.monotonic()
        out = subprocess.run(
            [str(self.codex.exe), "exec", "--skip-git-repo-check", *args, prompt],
            cwd=self.project,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        return RunResult(out.returncode, out.stdout, out.stderr, time.monotonic() - start)

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))

    def rollout(self, session_id: str) -> Path:
        found = [p for p in self.rollouts() if session_id in p.name]
        assert found, f"no rollout of session {session_id} in {self.codex_home / 'sessions'}"
        return found[0]

    def daily_files(self) -> list[Path]:
        return sorted((self.project / ".memsearch" / "memory").glob("????-??-??.md"))

    def memory_text(self) -> str:
        return "\n".join(p.read_text(encoding="utf-8") for p in self.daily_files())

    def engine_log(self) -> str:
        logs = sorted((self.memlane_home / "engine").glob("*.log"))
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs)

    def hook_failures(self) -> list[dict[str, Any]]:
        import json

        path = self.memlane_home / "engine" / "client-failures.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def stop_engine(self, timeout_s: float = 20) -> None:
        stop_engines(self.memlane_home, timeout_s)
