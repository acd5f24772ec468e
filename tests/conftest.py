"""Shared fixtures: every test gets its own MEMLANE_HOME and a clean environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

_REDIRECTING_ENV = (
    "MEMSEARCH_DIR",
    "MEMLANE_STORE_CMD",
    "PI_MEMSEARCH_STORE_CMD",
    "MEMLANE_SESSION_ID",
    "MEMLANE_TRANSCRIPT",
)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the whole run: the int8 model is derived once, not per test."""
    return tmp_path_factory.mktemp("memlane-cache")


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_cache: Path
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("memlane-home")
    monkeypatch.setenv("MEMLANE_HOME", str(home))
    for name in _REDIRECTING_ENV:
        monkeypatch.delenv(name, raising=False)
    import os

    for name in list(os.environ):
        if name.startswith("MEMLANE_") and name != "MEMLANE_HOME":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(shared_cache))
    # The sessions layer reads agents' transcripts: never the real ~/.pi or ~/.claude.
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "pi-agent"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    from memlane.core.scope import clear_store_command_cache

    clear_store_command_cache()
    yield home
    clear_store_command_cache()
