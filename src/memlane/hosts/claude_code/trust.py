"""Whether Claude Code trusts a folder, and what that means for memlane installed there.

Claude Code applies what a project's own files declare only once the folder
is trusted: accepting its trust dialog (``claude`` started there
interactively) records ``projects["<folder>"].hasTrustDialogAccepted: true``
in its state file, ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``
when that is set). A folder counts as trusted when it, or a folder above it
up to its git root (up to ``/`` outside a git repository), was accepted
(Claude Code 2.1.332). What an untrusted folder loses, seen with the real
binary (tests/e2e/test_claude_trust.py):

- a plugin enabled in the project's settings (``memlane install claude-code
  --project``, the default plugin mode): the project's marketplace is not
  registered, so Claude Code loads nothing of memlane, neither hooks nor
  tools nor skill, in ``claude -p`` too;
- ``--mode settings``: the project's ``permissions.allow`` is dropped, so
  memlane's tools ask before they run (and are refused in ``claude -p``);
  an interactive ``claude`` asks for trust before it runs anything.

memlane only reads the state file: it never trusts a folder on the user's behalf.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlane.transcripts.locate import CLAUDE_CONFIG_DIR_ENV, claude_dir, home_dir

TRUST_KEY = "hasTrustDialogAccepted"
#: Past this size the state file is not read (it is Claude Code's, and small).
STATE_MAX_BYTES = 32 * 1024 * 1024


def state_file(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's global state file (its ``projects`` and user-scope ``mcpServers``)."""
    environ = os.environ if env is None else env
    if environ.get(CLAUDE_CONFIG_DIR_ENV):
        return claude_dir(dict(environ)).absolute() / ".claude.json"
    return home_dir(environ).absolute() / ".claude.json"


def _git_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _projects(env: Mapping[str, str] | None) -> dict[str, Any]:
    path = state_file(env)
    try:
        if path.stat().st_size > STATE_MAX_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


def trusted_by(folder: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The folder whose accepted trust dialog covers *folder*, or None."""
    projects = _projects(env)
    if not projects:
        return None
    for start in dict.fromkeys((folder.absolute(), Path(os.path.realpath(folder)))):
        root = _git_root(start)
        for candidate in (start, *start.parents):
            entry = projects.get(str(candidate))
            if isinstance(entry, dict) and entry.get(TRUST_KEY) is True:
                return candidate
            if candidate == root:
                break
    return None


def how_to_trust(folder: Path) -> str:
    return (
        f"to trust it, run `claude` in {folder} once and accept the trust dialog "
        "(memlane never trusts a folder for you)"
    )


def untrusted_effect(mode: str) -> str:
    """What Claude Code leaves out of an untrusted folder with memlane installed there."""
    if mode == "settings":
        return (
            "memlane's tools there ask for permission (and are refused in `claude -p`), "
            "because Claude Code ignores the project's allow rules"
        )
    return "Claude Code loads nothing of memlane there: no hooks, no tools, no skill"
