"""Fixtures for the end-to-end tests with the real pi and Claude Code binaries
(pi_harness.py, claude_harness.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import ClaudeInstall, ensure_claude
from pi_harness import NpmUnavailable, PiInstall, ensure_pi, ensure_typescript

from fake_llm import FakeModel

# Read at import: the root conftest clears MEMLANE_* variables for every test.
CACHE = Path(
    os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e"
).expanduser()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: end-to-end tests with the real pi and Claude Code binaries"
    )


@pytest.fixture(scope="session")
def pi_install() -> PiInstall:
    """pi 1.x (and Node 22 if needed) from the npm registry, cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_pi(CACHE)
    except NpmUnavailable as exc:
        pytest.skip(f"pi e2e tests skipped: {exc}")


@pytest.fixture(scope="session")
def claude_install() -> ClaudeInstall:
    """Claude Code 2.1 from the npm registry, cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_claude(CACHE)
    except NpmUnavailable as exc:
        pytest.skip(f"Claude Code e2e tests skipped: {exc}")


@pytest.fixture(scope="session")
def tsc(pi_install: PiInstall) -> Path:
    """The TypeScript compiler from the npm registry, cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_typescript(CACHE)
    except NpmUnavailable as exc:
        pytest.skip(f"type check skipped: {exc}")


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModel]:
    """pi's model (fake_llm.FakeModel): agent turns and distillations scripted apart."""
    with FakeModel() as server:
        yield server
