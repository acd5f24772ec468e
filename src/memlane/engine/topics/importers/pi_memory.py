"""pi-memory (``@yandy0725/pi-memory``): where it keeps a project's memory, and its import.

``<memoryDir>/<hash>/`` where ``memoryDir`` is ``~/.pi/memory`` (or
``memoryDir`` in the agent directory's ``memory.json``) and ``<hash>`` the
first 12 hex digits of the sha256 of the project's git root (``git rev-parse
--show-toplevel``), else of its absolute path.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import NotFoundError
from memlane.engine.topics.importers.apply import run_import
from memlane.engine.topics.importers.report import PI_MEMORY, ImportReport
from memlane.transcripts.locate import expand, home_dir, pi_agent_dir

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

PI_HASH_CHARS = 12


def pi_memory_root(env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """pi-memory's ``memoryDir`` and where it came from."""
    environ = os.environ if env is None else env
    agent_dir = pi_agent_dir(environ)
    for name in ("memory.json", "pi-memory.json"):
        config = agent_dir / name
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("memoryDir")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value.strip():
            return expand(value.strip(), environ), f"memoryDir in {config}"
    return home_dir(environ) / ".pi" / "memory", "the default memoryDir"


def pi_memory_hash(project_key: str) -> str:
    """pi-memory's directory name for a project: sha256 of its git root (or path), 12 hex."""
    return hashlib.sha256(project_key.encode("utf-8")).hexdigest()[:PI_HASH_CHARS]


def default_pi_memory_dir(
    mem: ProjectMemory, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """This project's pi-memory directory and a sentence saying how it was derived."""
    root, origin = pi_memory_root(env)
    keys = list(dict.fromkeys([str(mem.scope.repository_dir), os.path.abspath(mem.scope.cwd)]))
    for key in keys:
        candidate = root / pi_memory_hash(key)
        if candidate.is_dir():
            break
    else:
        key = keys[0]
        candidate = root / pi_memory_hash(key)
    how = (
        f"{candidate.name} = first {PI_HASH_CHARS} hex digits of sha256({key!r}), the "
        f"project's git root or absolute path, under {root} ({origin})"
    )
    return candidate, how


def import_pi_memory(
    mem: ProjectMemory,
    directory: str | Path | None = None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> ImportReport:
    """Import a pi-memory directory (default: this project's ``~/.pi/memory/<hash>/``)."""
    derivation = None
    if directory is None:
        path, derivation = default_pi_memory_dir(mem, env)
    else:
        path = Path(directory).expanduser().absolute()
    if not path.is_dir():
        hint = "pass the directory: memlane import pi-memory DIR"
        if derivation:
            hint = f"looked there because {derivation}; {hint}"
        raise NotFoundError(f"no pi-memory directory at {path}", hint)
    return run_import(mem, PI_MEMORY, path, dry_run=dry_run, derivation=derivation)
