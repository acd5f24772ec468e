"""The fixtures every test shares.

Every test gets its own ``MEMLANE_HOME`` and an environment without the
user's memlane settings (autouse). On request:

* ``clock``: a ``FixedClock`` at ``helpers.NOW``; pass it on (``open_memory``,
  ``Memory.open(..., clock=clock)``, ``cli``) so no test depends on today.
* ``project``: a fresh project directory (a git root) below ``tmp_path``.
* ``memory``: that project's ``Memory`` on ``clock``, lexical only, with a
  50 ms index debounce (closed after the test).
* ``cli``: ``memlane`` run in this process on ``clock``, in ``project``.
* ``fake_openai`` / ``fake_anthropic``: fake LLM servers on 127.0.0.1
  (``fake_llm.py``); ``server.llm()`` is memlane's provider pointed at them.
* ``fake_embeddings``: a fake embedding server (``fake_embedding.py``).

docs/testing.md describes the lanes, the markers and the rules the suite
checks on itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from fake_llm import FakeAnthropic, FakeOpenAI
from helpers import NOW, Cli, FixedClock, make_project, open_memory
from memlane.engine.memory import Memory


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        action="store_true",
        help="tests/fault's long run: every reach of every kill point, 10k captures (make soak)",
    )


_REDIRECTING_ENV = (
    "MEMSEARCH_DIR",
    "MEMLANE_STORE_CMD",
    "PI_MEMSEARCH_STORE_CMD",
    "MEMLANE_SESSION_ID",
    "MEMLANE_TRANSCRIPT",
)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(NOW)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def memory(project: Path, clock: FixedClock) -> Iterator[Memory]:
    mem = open_memory(project, clock=clock, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50")
    yield mem
    mem.close()


@pytest.fixture
def cli(project: Path, clock: FixedClock) -> Cli:
    return Cli(clock, cwd=project)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


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


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    """A fake OpenAI-compatible embedding server on 127.0.0.1 (``fake_embedding.py``)."""
    with FakeEmbeddings() as server:
        yield server
