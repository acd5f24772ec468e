"""Claude Code auto memory: where Claude Code keeps a project's memory, and its import.

``$CLAUDE_CONFIG_DIR/projects/<encoded>/memory/`` (default ``~/.claude``;
``<encoded>`` is the project's main checkout path with every character other
than a letter or digit turned into ``-``), unless a settings file names an
``autoMemoryDirectory``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import NotFoundError
from memlane.core.scope import repository_dir_of
from memlane.engine.topics.importers.apply import run_import
from memlane.engine.topics.importers.report import CLAUDE_CODE, ImportReport
from memlane.store.layout import MEMORY_INDEX
from memlane.transcripts.locate import claude_dir, claude_project_dir_name, expand

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

# Claude Code cuts an encoded project path at this length and appends a hash
# of the full path; such a directory is found by its prefix.
CLAUDE_NAME_MAX = 200


def claude_projects_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps its projects (one directory per project, named
    by ``claude_project_dir_name``, holding its transcripts and ``memory/``)."""
    return claude_dir(env) / "projects"


def _main_checkout(repo: Path) -> Path:
    """The main checkout of a linked worktree (Claude Code keys memory by it), else *repo*."""
    dot_git = repo / ".git"
    if not dot_git.is_file():
        return repo
    try:
        first = dot_git.read_text(encoding="utf-8").strip()
    except OSError:
        return repo
    if not first.startswith("gitdir:"):
        return repo
    git_dir = (repo / first[len("gitdir:") :].strip()).resolve()
    try:
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return repo
    return common.parent if common.name == ".git" else repo


def _configured_claude_dir(project: Path, config_root: Path, env: Mapping[str, str]) -> Path | None:
    """``autoMemoryDirectory`` from the local project settings or the user's settings."""
    for settings in (project / ".claude" / "settings.local.json", config_root / "settings.json"):
        try:
            value = json.loads(settings.read_text(encoding="utf-8")).get("autoMemoryDirectory")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and (value.startswith("~/") or os.path.isabs(value)):
            return expand(value, env)
    return None


def default_claude_code_dir(
    mem: ProjectMemory, project_dir: str | Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """A project's Claude Code auto-memory directory and how it was derived."""
    environ = os.environ if env is None else env
    config_root = claude_dir(environ)
    if project_dir is None:
        cwd, repo = mem.scope.cwd, mem.scope.repository_dir
    else:
        cwd = Path(project_dir).expanduser().absolute()
        repo = repository_dir_of(cwd)
    custom = _configured_claude_dir(repo, config_root, environ)
    if custom is not None:
        return custom, f"autoMemoryDirectory in the Claude Code settings names {custom}"
    keys = list(dict.fromkeys(str(p) for p in (_main_checkout(repo), repo, cwd)))
    projects = claude_projects_dir(environ)
    for key in keys:
        name = claude_project_dir_name(key)
        candidate = projects / name / "memory"
        if not candidate.is_dir() and len(name) > CLAUDE_NAME_MAX:
            cut = sorted(projects.glob(f"{name[:CLAUDE_NAME_MAX]}-*/memory"))
            candidate = cut[0] if len(cut) == 1 else candidate
        if candidate.is_dir():
            break
    else:
        key = keys[0]
        candidate = projects / claude_project_dir_name(key) / "memory"
    how = (
        f"{candidate.parent.name} = the project path {key!r} with every character other "
        f"than a letter or digit turned into '-', under {projects}"
    )
    return candidate, how


def import_claude_code(
    mem: ProjectMemory,
    project_dir: str | Path | None = None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> ImportReport:
    """Import Claude Code's auto memory of a project (default: this one).

    *project_dir* is the project whose memory to import; a Claude Code
    ``memory`` directory itself (holding ``MEMORY.md``) is taken as is.
    """
    given = Path(project_dir).expanduser().absolute() if project_dir is not None else None
    if given is not None and given.name == "memory" and (given / MEMORY_INDEX).is_file():
        path, derivation = given, None
    else:
        path, derivation = default_claude_code_dir(mem, given, env)
    if not path.is_dir():
        raise NotFoundError(
            f"no Claude Code auto-memory directory at {path}",
            f"looked there because {derivation}; pass the project with --project DIR"
            if derivation
            else "pass the project with --project DIR",
        )
    return run_import(mem, CLAUDE_CODE, path, dry_run=dry_run, derivation=derivation)
