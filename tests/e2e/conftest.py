"""Fixtures for the end-to-end tests with the real pi, Claude Code, Codex and
OpenCode binaries (pi_harness.py, claude_harness.py, codex_harness.py,
opencode_harness.py) and the real memsearch (memsearch_harness.py).

memsearch's venv and the embedding endpoint both tools call are the
benchmarks' own (benchmarks/memsearch_venv.py, benchmarks/embed_server.py),
imported from there: one implementation for the side-by-side benchmark and
these tests, and nothing test-only ships in the package."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_harness import ClaudeInstall, ensure_claude
from codex_harness import CodexInstall, ensure_codex
from opencode_harness import OpencodeInstall, ensure_opencode
from pi_harness import NpmUnavailable, PiInstall, ensure_pi, ensure_typescript

from fake_llm import FakeModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from embed_server import EmbedServer, bundled_server
from memsearch_venv import MEMSEARCH_VERSION, MemsearchUnavailable, ensure_memsearch

# Read at import: the root conftest clears MEMLANE_* variables for every test.
CACHE = Path(
    os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e"
).expanduser()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: end-to-end tests with the real pi, Claude Code and memsearch"
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
def codex_install() -> CodexInstall:
    """The Codex CLI 0.171 from the npm registry, cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_codex(CACHE)
    except NpmUnavailable as exc:
        pytest.skip(f"Codex e2e tests skipped: {exc}")


@pytest.fixture(scope="session")
def opencode_install() -> OpencodeInstall:
    """OpenCode 1.18 from the npm registry, cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_opencode(CACHE)
    except NpmUnavailable as exc:
        pytest.skip(f"OpenCode e2e tests skipped: {exc}")


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


@pytest.fixture(scope="session")
def memsearch_python() -> Path:
    """The interpreter of a venv with memsearch (PyPI, pinned), cached in $MEMLANE_E2E_CACHE."""
    try:
        return ensure_memsearch(CACHE / f"memsearch-{MEMSEARCH_VERSION}")
    except MemsearchUnavailable as exc:
        pytest.skip(f"memsearch interop tests skipped: {exc}")


@pytest.fixture(scope="session")
def embedding_endpoint(shared_cache: Path) -> Iterator[EmbedServer]:
    """memlane's bundled model as OpenAI /v1/embeddings on 127.0.0.1, for memlane and memsearch."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMLANE_CACHE_DIR", str(shared_cache))  # the int8 model is derived once
        server = bundled_server()
    with server:
        yield server
