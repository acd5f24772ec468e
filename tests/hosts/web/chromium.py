"""Debian's Chromium for the browser tests, installed with apt when missing.

``ensure_chromium()`` returns the ``chromium`` executable on PATH; when
there is none it runs ``apt-get install -y chromium`` (once, under a file
lock in the e2e cache directory, so parallel runs do not race apt), after an
``apt-get update`` if the first try fails. Installing needs root: as root it
runs apt-get directly, otherwise through ``sudo -n`` (sudo without a
password prompt, where that is allowed). ``BrowserUnavailable`` (the tests
skip, saying why) only when it cannot be installed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

INSTALL_TIMEOUT_S = 900
CACHE = Path(
    os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e"
).expanduser()


class BrowserUnavailable(Exception):
    """Chromium is not installed and cannot be installed here."""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _as_root() -> list[str] | None:
    """The command prefix that runs apt-get as root here, or None."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") is None:
        return None
    probe = subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=30)
    return (
        ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"] if probe.returncode == 0 else None
    )


def _apt(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        [*prefix, "apt-get", *args],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        env=env,
    )


def ensure_chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise BrowserUnavailable("chromium is not installed and there is no apt-get to install it")
    prefix = _as_root()
    if prefix is None:
        raise BrowserUnavailable(
            "chromium is not installed; `apt-get install chromium` needs root "
            "(run the tests as root, allow `sudo -n`, or install chromium first)"
        )
    with _locked(CACHE / ".chromium.lock"):
        found = shutil.which("chromium")
        if found:
            return found
        done = _apt(prefix, "install", "-y", "chromium")
        if done.returncode != 0:
            _apt(prefix, "update")
            done = _apt(prefix, "install", "-y", "chromium")
        found = shutil.which("chromium")
        if done.returncode != 0 or not found:
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BrowserUnavailable(f"apt-get install chromium failed: {reason}")
        return found
