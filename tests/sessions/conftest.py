"""The sessions tests' project: the root ``project`` (a git root below
tmp_path) plus where pi and Claude Code keep its transcripts, inside the
isolated agent directories the root conftest points ``PI_CODING_AGENT_DIR``
and ``CLAUDE_CONFIG_DIR`` at (never the real ~/.pi or ~/.claude)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fixtures import Project

from memlane.engine.sessions.registry import close_stores
from memlane.transcripts.locate import claude_project_dir_name, pi_session_dir_name


@pytest.fixture
def agent_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    yield Project(
        root=project,
        pi_dir=agent / "sessions" / pi_session_dir_name(str(project)),
        claude_dir=claude / "projects" / claude_project_dir_name(str(project)),
    )
    # The stores are one per process (engine.sessions.open_store): let go of this test's.
    close_stores()
