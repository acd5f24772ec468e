"""Real git repositories with linked worktrees, for the worktree tests.

Every call runs the real ``git`` with the user's and the system's git
configuration left out, so a test sees what a fresh install of git does, and
on the real clock: ``make test-dates`` preloads libfaketime into the tests,
and git is not what those runs try (its local ``submodule add`` hangs there).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_TERMINAL_PROMPT": "0",
}


def git_env() -> dict[str, str]:
    """The environment every git of these tests runs in."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "FAKETIME")) and k != "LD_PRELOAD"
    }
    return {**env, **GIT_ENV}


def git(cwd: Path, *args: str) -> str:
    """Run ``git ARGS`` in *cwd*; its stdout, or the test fails with git's stderr."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)} failed in {cwd}: {done.stderr}"
    return done.stdout.strip()


def repository(parent: Path, name: str = "app") -> Path:
    """``parent/name``: a git repository with one commit (its main worktree)."""
    root = (parent / name).resolve()
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("app\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "init")
    return root


def add_worktree(main: Path, where: Path, branch: str) -> Path:
    """``git worktree add -b BRANCH WHERE`` from *main*; the new worktree's real path."""
    git(main, "worktree", "add", "-q", "-b", branch, str(where))
    return where.resolve()
