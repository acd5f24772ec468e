"""Every sessions test gets a project whose pi and Claude Code directories
live under tmp_path (never the real ~/.pi or ~/.claude)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _fixtures import Project

from memlane.engine.sessions import claude_project_dir_name, close_stores, pi_session_dir_name


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    agent = tmp_path / "pi-agent"
    claude = tmp_path / "claude"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    yield Project(
        root=root,
        pi_dir=agent / "sessions" / pi_session_dir_name(str(root)),
        claude_dir=claude / "projects" / claude_project_dir_name(str(root)),
    )
    close_stores()
