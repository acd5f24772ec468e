"""memsearch (PyPI, pinned) in a venv of its own, created once and reused.

One helper for everything that runs the real memsearch beside memlane: the
side-by-side benchmark (``compare_memsearch.py``, its venv under the
benchmark cache) and the interop tests (``tests/e2e/conftest.py``, under
``$MEMLANE_E2E_CACHE``). memsearch gets its own interpreter so its
dependency pins never meet memlane's, as on a user's machine.

    ensure_memsearch(venv_dir) -> <venv_dir>/bin/python

A venv holding another memsearch version is replaced. Concurrent callers
(two test runs) wait on a lock file beside the venv instead of installing
into the same directory at once. ``MemsearchUnavailable`` means it cannot be
installed here at all (no ``venv`` module, no route to the package index);
any other failure is an error worth seeing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

MEMSEARCH_VERSION = "0.4.23"
INSTALL_TIMEOUT_S = 900.0

# pip's words for "the package index cannot be reached".
_NETWORK = re.compile(
    r"Failed to establish a new connection|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Connection refused|"
    r"ConnectTimeoutError|ReadTimeoutError|NewConnectionError|ProxyError",
)


class MemsearchUnavailable(RuntimeError):
    """memsearch cannot be installed on this machine (the reason is the message)."""


def installed_version(python: Path) -> str | None:
    """The memsearch version importable by *python*, or None."""
    if not python.exists():
        return None
    probe = "import importlib.metadata as m; print(m.version('memsearch'))"
    got = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    return got.stdout.strip() if got.returncode == 0 else None


def ensure_memsearch(
    venv: Path, version: str = MEMSEARCH_VERSION, timeout_s: float = INSTALL_TIMEOUT_S
) -> Path:
    """The interpreter of *venv*, a venv holding ``memsearch==version`` (created when missing)."""
    from memlane.core.locks import lock_file

    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with lock_file(venv.parent / f".{venv.name}.lock", exclusive=True):
        if installed_version(python) == version:
            return python
        if venv.exists():
            shutil.rmtree(venv)
        print(
            f"creating {venv} (pip install memsearch=={version}) ...", file=sys.stderr, flush=True
        )
        base = getattr(sys, "_base_executable", None) or sys.executable
        made = subprocess.run(
            [base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=timeout_s
        )
        if made.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise MemsearchUnavailable(f"python -m venv failed: {_last_line(made.stderr)}")
        pip = subprocess.run(
            [python, "-m", "pip", "install", "--quiet", f"memsearch=={version}"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if pip.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            if _NETWORK.search(pip.stderr):
                raise MemsearchUnavailable(
                    f"pip could not reach the package index: {_last_line(pip.stderr)}"
                )
            raise RuntimeError(f"pip install memsearch=={version} failed:\n{pip.stderr[-2000:]}")
        return python


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
