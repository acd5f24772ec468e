"""The warm engine on Milvus Lite: one client for every call it serves, never
re-opened per search; a memlane command run in its own process still gets
the database; the engine lets go of it when it exits.

Real processes (the ``memlane`` command, the engine it starts), real Milvus
Lite, embeddings from the fake server on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fake_embedding import FakeEmbeddings
from memlane.core import engine_client, link
from memlane.index.milvus.connection import LINGER_S, lock_is_held

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

pytestmark = pytest.mark.subprocess

SCRIPT = Path(sys.executable).with_name("memlane")
#: Longer than a short-lived process keeps the database after a use: each
#: search below would find it released, were it not held.
GAP_S = LINGER_S * 2.5


@pytest.fixture
def lite(
    tmp_path: Path, project: Path, fake_embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """*project* indexed into a Milvus Lite database (every process gets the settings)."""
    db = (tmp_path / "milvus.db").absolute()
    for name, value in {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": fake_embeddings.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embed",
        "MEMLANE_INDEX_BACKEND": "milvus",
        "MEMLANE_INDEX_URI": str(db),
        "MEMLANE_SESSIONS_ENABLED": "off",
    }.items():
        monkeypatch.setenv(name, value)
    for text in ("the deploy runs blue-green on Fridays", "the invoice export retries thrice"):
        assert memlane("write", text, cwd=project, MEMLANE_ENGINE="off").returncode == 0
    indexed = memlane("index", cwd=project, MEMLANE_ENGINE="off")
    assert indexed.returncode == 0, indexed.stderr
    assert not lock_is_held(db)
    return db


def memlane(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _engine(project: Path) -> engine_client.Client:
    started = memlane("engine", "start", cwd=project)
    assert started.returncode == 0, started.stderr
    return engine_client.Client.open(
        link.Place(), "test", str(project), time.monotonic() + 60, start=False
    )


def _search(client: engine_client.Client, query: str) -> dict[str, Any]:
    # Every match, whatever the fake vectors score: what is under test is the database.
    arguments = {"query": query, "min_score": 0}
    answer = client.call("tool", {"name": "memory_search", "arguments": arguments}, 120)
    assert isinstance(answer, dict)
    return answer


def _lite_state(client: engine_client.Client) -> dict[str, Any]:
    status = client.call("engine.status", {}, 30)
    assert isinstance(status, dict)
    state: dict[str, Any] = status["milvus_lite"]
    return state


def test_searches_through_the_engine_share_one_open_database_released_at_exit(
    lite: Path, project: Path
) -> None:
    with _engine(project) as client:
        assert "blue-green" in _search(client, "how do we deploy")["text"]
        opened = _lite_state(client)
        assert opened["open"] == [str(lite)]
        for query in ("invoice export", "deploy fridays", "retries"):
            time.sleep(GAP_S)
            _search(client, query)
        assert _lite_state(client) == opened  # never re-opened between searches
    assert lock_is_held(lite)  # held while the engine runs
    shown = memlane("engine", "status", cwd=project)
    assert f"holds Milvus Lite {lite}" in shown.stdout, shown.stdout
    stopped = memlane("engine", "stop", cwd=project)
    assert stopped.returncode == 0, stopped.stderr
    assert not lock_is_held(lite)  # let go when it exited
    alone = memlane("search", "deploy", "--min-score", "0", cwd=project, MEMLANE_ENGINE="off")
    assert alone.returncode == 0 and "blue-green" in alone.stdout, alone.stderr


def test_a_command_run_in_its_own_process_gets_the_database_the_engine_holds(
    lite: Path, project: Path
) -> None:
    with _engine(project) as client:
        _search(client, "how do we deploy")
        assert lock_is_held(lite)
        # `memlane index` runs in its own process, never in the engine: it asks
        # the engine to let go instead of reporting the database locked.
        assert memlane("write", "the staging certs rotate monthly", cwd=project).returncode == 0
        indexed = memlane("index", cwd=project)
        assert indexed.returncode == 0, indexed.stderr
        assert "locked" not in indexed.stderr
        # The engine opens it again for its next search, and finds the new entry.
        assert "staging certs" in _search(client, "staging certs rotate")["text"]
        assert _lite_state(client)["opens"] == 2


def test_a_command_that_wrote_leaves_its_rows_flushed_for_the_next_opener(
    lite: Path, project: Path
) -> None:
    """A command ends with os._exit once only daemon threads are left
    (core/process.exit_process): it flushes and closes its Lite database
    first. Before, a second index run left its rows in Lite's write-ahead
    log, and the next process (memsearch) replayed them on every open."""

    def logs() -> list[str]:
        return sorted(p.name for p in lite.rglob("wal_*") if p.is_file())

    assert logs() == []
    for text in ("the staging certs rotate monthly", "the nightly backup runs at two"):
        assert memlane("write", text, cwd=project, MEMLANE_ENGINE="off").returncode == 0
        indexed = memlane("index", cwd=project, MEMLANE_ENGINE="off")
        assert indexed.returncode == 0, indexed.stderr
        assert logs() == []
        assert not lock_is_held(lite)
    found = memlane(
        "search", "nightly backup", "--min-score", "0", cwd=project, MEMLANE_ENGINE="off"
    )
    assert found.returncode == 0 and "nightly backup" in found.stdout, found.stderr
