"""Run the real pi coding agent headless against the fake model, with memlane's pi package.

``ensure_pi(cache)`` installs Node 22 (only when the machine's node is older
than pi needs) and pi from the npm registry into a cache directory, once, under
a file lock; later runs reuse it. ``PiWorld`` is one isolated pi setup: an
agent directory (``PI_CODING_AGENT_DIR``) with ``models.json`` pointing at the
fake server and ``settings.json`` listing the package (installed with
``memlane install pi``'s own code), a ``HOME`` and a project directory, all in
a temp dir. ``PiWorld.run`` runs one prompt in ``--mode json``;
``PiWorld.rpc`` starts a ``--mode rpc`` process for multi-prompt scenarios.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import NOW

PI_PACKAGE = "@earendil-works/pi-coding-agent@1"
TYPESCRIPT_PACKAGE = "typescript@5"
NODE_MIN = (22, 19)
NODE_PACKAGE = "node-linux-{arch}@22"
INSTALL_TIMEOUT_S = 600
#: Fail fast when the registry is unreachable instead of npm's minute of retries.
NPM_FAST_FAIL = (
    "--fetch-retries=1",
    "--fetch-retry-mintimeout=1000",
    "--fetch-retry-maxtimeout=3000",
)
RUN_TIMEOUT_S = 180

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / "integrations" / "pi"


class NpmUnavailable(Exception):
    """The npm registry (or npm itself) cannot be reached: the e2e tests skip."""


@dataclass(frozen=True)
class PiInstall:
    node: Path
    cli: Path
    version: str


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _system_node() -> Path | None:
    found = shutil.which("node")
    if not found:
        return None
    try:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(found) if _version_tuple(out.stdout) >= NODE_MIN else None


def _npm() -> str:
    npm = shutil.which("npm")
    if not npm:
        raise NpmUnavailable(
            "npm is not installed, so pi cannot be installed from the npm registry"
        )
    return npm


def _registry_reachable(npm: str) -> None:
    try:
        out = subprocess.run(
            [npm, "view", PI_PACKAGE, "version", "--json", *NPM_FAST_FAIL],
            capture_output=True,
            text=True,
            timeout=90,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpmUnavailable(f"the npm registry cannot be reached ({exc})") from exc
    if out.returncode != 0:
        raise NpmUnavailable(
            f"the npm registry cannot be reached (npm view {PI_PACKAGE}: {_npm_reason(out.stderr)})"
        )


def _npm_reason(stderr: str) -> str:
    """The informative line of npm's error output (not the "complete log" pointer)."""
    lines = [
        line.removeprefix("npm error").removeprefix("npm ERR!").strip()
        for line in stderr.strip().splitlines()
    ]
    useful = [line for line in lines if line and "complete log" not in line]
    for line in useful:
        if re.search(r"\bE[A-Z]{3,}\b|request to|network|registry", line):
            return line
    return useful[-1] if useful else "no output"


def _node_package() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None or not sys.platform.startswith("linux"):
        raise NpmUnavailable(
            f"no Node 22 npm package for {sys.platform}/{machine}; install Node >= 22.19"
        )
    return NODE_PACKAGE.format(arch=arch)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_pi(cache: Path) -> PiInstall:
    """pi (and Node 22 when needed) installed under *cache*, reused between runs."""
    target = cache / "pi-1"
    stamp = target / ".memlane-ready.json"
    with _locked(cache / ".install.lock"):
        if stamp.exists():
            ready = json.loads(stamp.read_text())
            install = PiInstall(Path(ready["node"]), Path(ready["cli"]), ready["version"])
            if install.node.exists() and install.cli.exists():
                return install
        npm = _npm()
        _registry_reachable(npm)
        system_node = _system_node()
        specs = [PI_PACKAGE] if system_node else [_node_package(), PI_PACKAGE]
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        (target / "package.json").write_text('{"name": "memlane-e2e-pi", "private": true}\n')
        _npm_install(npm, target, specs)
        node = system_node or next((target / "node_modules").glob("node-linux-*/bin/node"))
        pkg = target / "node_modules" / "@earendil-works" / "pi-coding-agent"
        manifest = json.loads((pkg / "package.json").read_text())
        cli = pkg / manifest["bin"]["pi"]
        stamp.write_text(
            json.dumps({"node": str(node), "cli": str(cli), "version": manifest["version"]})
        )
        return PiInstall(node, cli, manifest["version"])


def _npm_install(npm: str, target: Path, specs: list[str]) -> None:
    """``npm install specs`` into *target*; NpmUnavailable when the registry cannot be reached."""
    out = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", *specs],
        cwd=target,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if out.returncode != 0:
        reason = _npm_reason(out.stderr)
        if re.search(r"E(AI_AGAIN|NOTFOUND|CONNREFUSED|TIMEDOUT|CONNRESET)|network", out.stderr):
            raise NpmUnavailable(f"npm install could not reach the registry: {reason}")
        raise RuntimeError(f"npm install {' '.join(specs)} failed: {reason}\n{out.stderr[-2000:]}")


def ensure_typescript(cache: Path) -> Path:
    """The TypeScript compiler (``tsc``'s JavaScript entry) installed under *cache*, reused between runs.

    A directory of its own beside pi's: reinstalling pi (which wipes ``pi-1``)
    keeps it, and the type check reads pi's type definitions from ``pi-1``.
    """
    target = cache / "typescript-5"
    tsc = target / "node_modules" / "typescript" / "bin" / "tsc"
    stamp = target / ".memlane-ready"
    with _locked(cache / ".install.lock"):
        if stamp.exists() and tsc.exists():
            return tsc
        npm = _npm()
        _registry_reachable(npm)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        (target / "package.json").write_text(
            '{"name": "memlane-e2e-typescript", "private": true}\n'
        )
        _npm_install(npm, target, [TYPESCRIPT_PACKAGE])
        stamp.write_text("")
        return tsc


# -- one isolated pi setup -------------------------------------------------------


@dataclass
class RunResult:
    returncode: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str
    seconds: float

    def final_text(self) -> str:
        for event in reversed(self.events):
            if event.get("type") == "message_end":
                message = event.get("message", {})
                if message.get("role") == "assistant":
                    return "".join(
                        c.get("text", "")
                        for c in message.get("content", [])
                        if c.get("type") == "text"
                    )
        return ""


@dataclass
class PiWorld:
    pi: PiInstall
    root: Path
    base_url: str
    env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.agent_dir = self.root / "agent"
        self.home = self.root / "home"
        self.project = self.root / "project"
        for d in (self.agent_dir, self.home, self.project):
            d.mkdir(parents=True, exist_ok=True)
        models = {
            "providers": {
                "fake": {
                    "baseUrl": self.base_url,
                    "api": "openai-completions",
                    "apiKey": "fake-key",
                    "compat": {"supportsDeveloperRole": False, "supportsStore": False},
                    "models": [
                        {
                            "id": "fake-big",
                            "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0},
                        },
                        {
                            "id": "fake-small",
                            "cost": {"input": 0.1, "output": 0.4, "cacheRead": 0, "cacheWrite": 0},
                        },
                    ],
                }
            }
        }
        (self.agent_dir / "models.json").write_text(json.dumps(models, indent=2))

    # -- package -----------------------------------------------------------

    def install_package(self, command: str | None) -> list[str]:
        from memlane.hosts.pi.install import install

        report = install(
            command=command, package=PACKAGE_DIR, env={"PI_CODING_AGENT_DIR": str(self.agent_dir)}
        )
        return report.lines

    def forget_command(self) -> None:
        """Drop the recorded memlane (the package stays listed in pi's settings)."""
        (self.agent_dir / "memlane.json").unlink(missing_ok=True)

    # -- environment -------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_")) and k != "MEMLANE_COMMAND"
        }
        env.update(
            PI_CODING_AGENT_DIR=str(self.agent_dir),
            HOME=str(self.home),
            PI_OFFLINE="1",
            NO_COLOR="1",
            # The sidecar's clock (memlane's MEMLANE_NOW): the suite's fixed day,
            # whatever day the tests run on.
            MEMLANE_NOW=NOW.isoformat(),
            PATH=f"{self.pi.node.parent}:/usr/local/bin:/usr/bin:/bin",
        )
        env.update(self.env_extra)
        env.update(extra)
        return env

    def argv(self, *args: str) -> list[str]:
        return [
            str(self.pi.node),
            str(self.pi.cli),
            "--provider",
            "fake",
            "--model",
            "fake-big",
            *args,
        ]

    def run(self, prompt: str, *, timeout_s: float = RUN_TIMEOUT_S, **env: str) -> RunResult:
        start = time.monotonic()
        out = subprocess.run(
            self.argv("--mode", "json", prompt),
            cwd=self.project,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        events = []
        for line in out.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return RunResult(out.returncode, events, out.stdout, out.stderr, time.monotonic() - start)

    def print_mode(self, prompt: str, *, timeout_s: float = RUN_TIMEOUT_S, **env: str) -> RunResult:
        """One prompt as ``pi -p`` runs it: the answer's text on stdout, no events."""
        start = time.monotonic()
        out = subprocess.run(
            self.argv("-p", prompt),
            cwd=self.project,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        return RunResult(out.returncode, [], out.stdout, out.stderr, time.monotonic() - start)

    def rpc(self, **env: str) -> RpcPi:
        return RpcPi(self.argv("--mode", "rpc"), cwd=self.project, env=self.env(**env))

    def session_files(self) -> list[Path]:
        return sorted(
            (self.agent_dir / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime
        )


def sidecar_pids(project: Path) -> list[int]:
    """Running ``memlane sidecar`` processes serving *project* (from /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        if b"sidecar" in argv and str(project).encode() in argv:
            pids.append(int(proc.name))
    return sorted(pids)


def read_session(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, entries) of a pi session file."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines[0], lines[1:]


class RpcPi:
    """pi in ``--mode rpc``: commands with ids, events collected by a reader thread."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.records: list[dict[str, Any]] = []
        self._new: queue.Queue[dict[str, Any]] = queue.Queue()
        self._backlog: list[dict[str, Any]] = []
        self._next = 0
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:  # binary: splits on LF only
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            self.records.append(record)
            self._new.put(record)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def wait_record(
        self, match: Callable[[dict[str, Any]], bool], timeout_s: float = RUN_TIMEOUT_S
    ) -> dict[str, Any]:
        """The first unconsumed record that matches; the others stay for later waits.

        A record pi sent that did not match is kept for a later call, so a test
        can wait for a UI request while the response to its command is pending.
        """
        for i, record in enumerate(self._backlog):
            if match(record):
                return self._backlog.pop(i)
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    "pi rpc: no matching record; stderr tail:\n"
                    + "\n".join(self.stderr_lines[-20:])
                )
            try:
                record = self._new.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"pi exited ({self.proc.returncode}):\n"
                        + "\n".join(self.stderr_lines[-20:])
                    ) from None
                continue
            if match(record):
                return record
            self._backlog.append(record)

    def command(self, type_: str, timeout_s: float = 60, **params: Any) -> dict[str, Any]:
        self._next += 1
        rid = f"t{self._next}"
        self.send({"id": rid, "type": type_, **params})
        response = self.wait_record(
            lambda r: r.get("type") == "response" and r.get("id") == rid, timeout_s
        )
        if not response.get("success"):
            raise RuntimeError(f"pi rpc {type_} failed: {response.get('error')}")
        return dict(response.get("data") or {})

    def prompt(self, message: str, timeout_s: float = RUN_TIMEOUT_S) -> dict[str, Any]:
        """Send a prompt and wait until the run settles; returns the agent_settled event."""
        data = self.command("prompt", message=message)
        if data.get("disposition") == "handled":
            return {}
        return self.wait_record(lambda r: r.get("type") == "agent_settled", timeout_s)

    def wait_event(self, type_: str, timeout_s: float = RUN_TIMEOUT_S) -> dict[str, Any]:
        """The next record of this type (after those already consumed)."""
        return self.wait_record(lambda r: r.get("type") == type_, timeout_s)

    def send(self, record: dict[str, Any]) -> None:
        """Write one record (a command, an ``extension_ui_response``) to pi's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(record) + "\n").encode())
        self.proc.stdin.flush()

    def close(self, timeout_s: float = 60) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> RpcPi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
