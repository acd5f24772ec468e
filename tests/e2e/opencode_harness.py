"""Run the real OpenCode (``opencode run``) against a fake OpenAI-compatible model on 127.0.0.1.

``ensure_opencode(cache)`` installs ``opencode-ai`` (its native binary comes in
a per-platform optional package) from the npm registry into
``<cache>/opencode-1``, once, under the cache's install lock (shared with
``pi_harness.py``). ``NpmUnavailable`` (the tests skip) only when the registry
cannot be reached.

``OpencodeWorld`` is one isolated OpenCode setup in a temp dir: a ``HOME``
(OpenCode's config in ``.config/opencode``, its database in
``.local/share/opencode``), a project (a git root), a ``MEMLANE_HOME``, and a
provider ``fake`` (``@ai-sdk/openai-compatible``, which OpenCode bundles: no
package is fetched at run time) whose ``baseURL`` is the fake server. OpenCode
installs ``@opencode-ai/plugin`` into its config directory from npm the first
time a plugin is configured, and waits for it then: the world's first run with
memlane needs the registry, later runs find it installed.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env import agent_env
from npm_cli import ensure_cli

from helpers import make_project, stop_engines

OPENCODE_PACKAGE = "opencode-ai@1.18.33"
OPENCODE_VERSION = "1.18.33"
RUN_TIMEOUT_S = 180
MEMLANE = str(Path(sys.executable).parent / "memlane")
SCHEMA = "https://opencode.ai/config.json"


@dataclass(frozen=True)
class OpencodeInstall:
    exe: Path
    version: str


def _version(exe: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(exe), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "OPENCODE_DISABLE_AUTOUPDATE": "1"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _binary(target: Path) -> Path | None:
    for candidate in sorted((target / "node_modules").glob("opencode-linux-*/bin/opencode")):
        if candidate.is_file() and candidate.stat().st_size > 1_000_000:
            return candidate
    return None


def ensure_opencode(cache: Path) -> OpencodeInstall:
    """OpenCode installed under *cache*, reused between runs."""
    found, version = ensure_cli(
        cache,
        directory="opencode-1",
        package=OPENCODE_PACKAGE,
        version=OPENCODE_VERSION,
        find_binary=_binary,
        version_of=_version,
    )
    return OpencodeInstall(found, version)


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class OpencodeWorld:
    opencode: OpencodeInstall
    root: Path
    base_url: str
    env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.memlane_home = self.root / "mh"
        self.config_dir = self.home / ".config" / "opencode"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.project = make_project(self.root, "project")
        # A real repository: OpenCode takes a directory with an empty .git for none.
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        self.write_config()

    @property
    def config_file(self) -> Path:
        return self.config_dir / "opencode.json"

    @property
    def db(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    def write_config(self) -> None:
        """OpenCode's own configuration: the fake provider, as a user would write it."""
        config = {
            "$schema": SCHEMA,
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": self.base_url, "apiKey": "sk-fake"},
                    "models": {"fake-model": {"name": "Fake model"}},
                }
            },
            "model": "fake/fake-model",
        }
        self.config_file.write_text(json.dumps(config, indent=2) + "\n")

    # -- memlane in OpenCode ---------------------------------------------------------

    def install_env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "MEMLANE_HOME": str(self.memlane_home),
            **{k: v for k, v in self.env_extra.items() if k.startswith("MEMLANE_")},
        }

    def install(self) -> list[str]:
        from memlane.hosts.opencode.install import install

        return install(None, command=MEMLANE, env=self.install_env()).lines

    def uninstall(self) -> list[str]:
        from memlane.hosts.opencode.install import uninstall

        return uninstall(None, env=self.install_env()).lines

    # -- running opencode --------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = agent_env(
            ("OPENCODE", "MEMLANE_", "OPENAI_", "XDG_", "ANTHROPIC_"),
            HOME=str(self.home),
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            OPENCODE_DISABLE_SHARE="1",
        )
        env.update(self.env_extra)
        env.update(extra)
        return env

    def run(
        self, prompt: str, *args: str, timeout_s: float = RUN_TIMEOUT_S, **env: str
    ) -> RunResult:
        start = time.monotonic()
        out = subprocess.run(
            [str(self.opencode.exe), "run", prompt, *args],
            cwd=self.project,
            # OpenCode takes its directory from PWD, as a shell sets it.
            env=self.env(PWD=str(self.project), **env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        return RunResult(out.returncode, out.stdout, out.stderr, time.monotonic() - start)

    # -- what OpenCode and memlane left ---------------------------------------------

    def sessions(self) -> list[str]:
        """OpenCode's session ids, oldest first."""
        if not self.db.exists():
            return []
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT id FROM session ORDER BY time_created").fetchall()
        return [str(r[0]) for r in rows]

    def copy_of(self, session_id: str) -> Path:
        from memlane.transcripts.locate import opencode_copy_dir

        directory = opencode_copy_dir(str(self.project), {"MEMLANE_HOME": str(self.memlane_home)})
        return directory / f"{session_id}.jsonl"

    def daily_files(self) -> list[Path]:
        return sorted((self.project / ".memsearch" / "memory").glob("????-??-??.md"))

    def memory_text(self) -> str:
        return "\n".join(p.read_text(encoding="utf-8") for p in self.daily_files())

    def engine_log(self) -> str:
        logs = sorted((self.memlane_home / "engine").glob("*.log"))
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs)

    def stop_engine(self, timeout_s: float = 20) -> None:
        stop_engines(self.memlane_home, timeout_s)

    def config_snapshot(self) -> dict[str, bytes]:
        """Every file of OpenCode's config directory but the packages OpenCode installs there."""
        skip = {"node_modules", "package.json", "package-lock.json", "bun.lock", ".gitignore"}
        return {
            str(p.relative_to(self.config_dir)): p.read_bytes()
            for p in sorted(self.config_dir.rglob("*"))
            if p.is_file() and not (set(p.relative_to(self.config_dir).parts) & skip)
        }

    def failures(self) -> list[dict[str, Any]]:
        path = self.memlane_home / "engine" / "client-failures.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
