"""A native command-line agent (Claude Code, Codex, OpenCode) installed from npm into
the e2e cache once, under the cache's install lock (shared with ``pi_harness.py``).

npm's install scripts stay off: each agent's binary comes in a per-platform
optional package, which ``find_binary`` picks out. ``NpmUnavailable`` (the
tests skip) only when the registry cannot be reached.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from pi_harness import NPM_FAST_FAIL, NpmUnavailable, _locked, _npm, _npm_reason

INSTALL_TIMEOUT_S = 900


def ensure_cli(
    cache: Path,
    *,
    directory: str,
    package: str,
    version: str,
    find_binary: Callable[[Path], Path | None],
    version_of: Callable[[Path], str | None],
) -> tuple[Path, str]:
    """``(binary, version)`` of *package* under ``cache/directory``, installed on first use."""
    target = cache / directory
    name = package.rsplit("@", 1)[0]
    with _locked(cache / ".install.lock"):
        found = find_binary(target)
        got = version_of(found) if found else None
        if found and got == version:
            return found, got
        npm = _npm()
        out = subprocess.run(
            [npm, "view", package, "version", *NPM_FAST_FAIL],
            capture_output=True,
            text=True,
            timeout=90,
        )
        if out.returncode != 0:
            raise NpmUnavailable(
                f"the npm registry cannot be reached (npm view {package}: "
                f"{_npm_reason(out.stderr)})"
            )
        target.mkdir(parents=True, exist_ok=True)
        manifest = f'{{"name": "memlane-e2e-{directory}", "private": true}}\n'
        (target / "package.json").write_text(manifest)
        out = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", package],
            cwd=target,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        if out.returncode != 0:
            raise NpmUnavailable(f"npm install {package}: {_npm_reason(out.stderr)}")
        found = find_binary(target)
        got = version_of(found) if found else None
        if found is None or got is None:
            raise RuntimeError(f"{name} installed, but its binary does not run in {target}")
        return found, got
