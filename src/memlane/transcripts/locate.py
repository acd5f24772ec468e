"""Where pi and Claude Code keep a project's transcripts: the one copy.

- pi: ``$PI_CODING_AGENT_DIR`` (default ``~/.pi/agent``) ``/sessions/--<cwd>--/*.jsonl``,
  or one flat ``$PI_CODING_AGENT_SESSION_DIR`` for every project, where a
  file's header line names the cwd it was started in;
- Claude Code: ``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``)
  ``/projects/<cwd, non-alphanumerics as '-'>/*.jsonl``;
- Codex: ``$CODEX_HOME`` (default ``~/.codex``) ``/sessions/YYYY/MM/DD/rollout-*.jsonl``
  for every project, where a file's first line names the cwd (transcripts/codex.py).
- OpenCode keeps its sessions in a SQLite database (``opencode_db``); the
  engine keeps a JSONL copy of each (transcripts/opencode.py) in
  ``$MEMLANE_HOME/transcripts/opencode/<cwd as Claude Code names it>/<session id>.jsonl``.

``env`` is the process environment unless given; its ``HOME`` is the home
the defaults and ``~`` start from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memlane.core.regular_file import FileTooLargeError, NotRegularFileError
from memlane.transcripts.jsonl import open_transcript_file, parse_line
from memlane.transcripts.model import CLAUDE_CODE, CODEX, OPENCODE, PI

PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
PI_SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
CLAUDE_CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"
OPENCODE_DB_ENV = "OPENCODE_DB"
MEMLANE_HOME_ENV = "MEMLANE_HOME"


@dataclass(frozen=True)
class Source:
    """One transcript file and its format."""

    path: Path
    format: str  # PI | CLAUDE_CODE | OPENCODE


def pi_session_dir_name(cwd: str) -> str:
    """pi's directory name for a cwd (session-manager.js getDefaultSessionDir):
    one leading separator dropped, every ``/``, ``\\`` and ``:`` → ``-``,
    wrapped in ``--``."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def claude_project_dir_name(cwd: str) -> str:
    """Claude Code's directory name for a cwd: every non-alphanumeric → ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    return Path(environ.get("HOME") or Path.home())


def expand(value: str, env: Mapping[str, str] | None = None) -> Path:
    """*value* with a leading ``~`` read as ``env``'s home."""
    if value == "~" or value.startswith("~/"):
        return home_dir(env) / value[2:]
    return Path(value).expanduser()


def pi_agent_dir(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    raw = environ.get(PI_AGENT_DIR_ENV)
    return expand(raw, environ) if raw else home_dir(environ) / ".pi" / "agent"


def pi_flat_session_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """``$PI_CODING_AGENT_SESSION_DIR``: one directory for every project, or None."""
    environ = os.environ if env is None else env
    raw = environ.get(PI_SESSION_DIR_ENV)
    return expand(raw, environ) if raw else None


def claude_dir(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    raw = environ.get(CLAUDE_CONFIG_DIR_ENV)
    return expand(raw, environ) if raw else home_dir(environ) / ".claude"


def pi_project_dir(cwd: str, env: Mapping[str, str] | None = None) -> Path:
    """pi's default session directory for sessions started in *cwd*."""
    return pi_agent_dir(env) / "sessions" / pi_session_dir_name(cwd)


def claude_project_dir(cwd: str, env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's project directory for sessions started in *cwd*."""
    return claude_dir(env) / "projects" / claude_project_dir_name(cwd)


def opencode_db(env: Mapping[str, str] | None = None) -> Path:
    """OpenCode's database: ``$OPENCODE_DB`` (a bare name lives in its data
    directory), else ``$XDG_DATA_HOME`` (default ``~/.local/share``)
    ``/opencode/opencode.db``."""
    environ = os.environ if env is None else env
    data = environ.get("XDG_DATA_HOME")
    base = (expand(data, environ) if data else home_dir(environ) / ".local" / "share") / "opencode"
    raw = environ.get(OPENCODE_DB_ENV)
    if raw:
        path = expand(raw, environ)
        return path if path.is_absolute() else base / path
    return base / "opencode.db"


def opencode_copy_dir(cwd: str, env: Mapping[str, str] | None = None) -> Path:
    """Where the engine keeps the JSONL copies of OpenCode sessions started in *cwd*."""
    environ = os.environ if env is None else env
    home = expand(environ.get(MEMLANE_HOME_ENV) or "~/.memlane", environ)
    return home / "transcripts" / "opencode" / claude_project_dir_name(cwd)


def format_of_path(path: Path) -> str:
    """The format a transcript's location suggests (Claude Code's under a
    ``.claude`` directory, Codex's a ``rollout-*`` file, an OpenCode copy
    under ``transcripts/opencode``, else pi's): a fallback for when no line tells."""
    if path.name.startswith("rollout-"):
        return CODEX
    if "/transcripts/opencode/" in str(path):
        return OPENCODE
    return CLAUDE_CODE if "/.claude" in str(path) else PI


def jsonl_files(directory: Path) -> list[Path]:
    """The ``*.jsonl`` files of *directory*, sorted; none when it is missing.

    A file that is a symbolic link counts only when what it points at lies
    in *directory* itself: a link in a project's session directory to another
    project's transcript would otherwise make that transcript this
    project's, for the sessions index and for what an agent may read (L3).
    Both sides are compared resolved, so a directory reached through a link
    (a home under ``/var/home``) still lists its files.
    """
    try:
        real = os.path.realpath(directory)
        return sorted(
            p
            for p in directory.glob("*.jsonl")
            if p.is_file() and (not p.is_symlink() or os.path.dirname(os.path.realpath(p)) == real)
        )
    except OSError:
        return []


def pi_header_cwd(path: Path) -> str | None:
    """The cwd a pi session file's header names, as written; None when the
    file is unreadable or does not open with a pi header."""
    try:
        with open_transcript_file(path) as handle:
            obj = parse_line(handle.readline(64 * 1024))
    except (OSError, NotRegularFileError, FileTooLargeError):
        return None
    if obj is None or obj.get("type") != "session":
        return None
    cwd = obj.get("cwd")
    return cwd if isinstance(cwd, str) else None


def discover_sources(
    project_dirs: Iterable[str | Path], env: Mapping[str, str] | None = None
) -> list[Source]:
    """Transcript files of agent sessions started in any of ``project_dirs``
    (each as given made absolute, and resolved), sorted by path.

    With a flat pi session directory set, pi writes there only: its files
    whose header names one of the project's cwds are the pi sources.
    """
    cwds: list[str] = []
    for directory in project_dirs:
        for form in (str(Path(directory).absolute()), os.path.realpath(directory)):
            if form not in cwds:
                cwds.append(form)
    found: dict[Path, Source] = {}
    flat = pi_flat_session_dir(env)
    if flat is not None:
        for path in jsonl_files(flat):
            if pi_header_cwd(path) in cwds:
                found[path] = Source(path, PI)
    else:
        for cwd in cwds:
            for path in jsonl_files(pi_project_dir(cwd, env)):
                found[path] = Source(path, PI)
    for cwd in cwds:
        for path in jsonl_files(claude_project_dir(cwd, env)):
            found.setdefault(path, Source(path, CLAUDE_CODE))
        for path in jsonl_files(opencode_copy_dir(cwd, env)):
            found.setdefault(path, Source(path, OPENCODE))
    from memlane.transcripts import codex

    for path in codex.project_files(cwds, env):
        found.setdefault(path, Source(path, CODEX))
    return sorted(found.values(), key=lambda s: str(s.path))
