"""The engine on the Milvus backend: a real Milvus Lite database, a fake
embedding server on 127.0.0.1, and a closed port for an unreachable server.

What the backend itself does is tests/index/milvus; here: the engine's choices
around it (search says the index is unavailable, writes are never lost,
status health, reindex keeps what others wrote, forget, migrate both ways).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from helpers import NOW, Cli, FixedClock, open_memory
from memlane.engine.project import Memory

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(server: FakeEmbeddings, uri: str) -> dict[str, str]:
    return {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embed",
        "MEMLANE_INDEX_BACKEND": "milvus",
        "MEMLANE_INDEX_URI": uri,
    }


@pytest.fixture
def lite(tmp_path: Path) -> str:
    return str(tmp_path / "milvus.db")


def _memory(project: Path, env: dict[str, str], clock: FixedClock) -> Memory:
    return open_memory(project, clock=clock, lexical=False, **env)


def test_an_unreachable_server_loses_no_write_and_search_says_why(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock
) -> None:
    env = _env(fake_embeddings, f"http://127.0.0.1:{_closed_port()}")
    mem = _memory(project, env, clock)
    try:
        entry = mem.write("the nightly job rotates the staging certificates")
        assert "rotates the staging certificates" in Path(entry.path).read_text()
        result = mem.search("staging certificates")
        assert result.hits == []
        (notice,) = [n for n in result.notices if "unavailable" in n]
        assert "cannot reach Milvus at http://127.0.0.1:" in notice
        assert "index.uri" in notice  # the fix
        status = mem.status()
        assert status.backend == "milvus"
        assert status.index_health["error"].startswith("cannot reach Milvus")
        assert any(line.startswith("index: cannot reach Milvus") for line in status.missing)
    finally:
        mem.close()


def test_cli_search_and_status_on_an_unreachable_server(
    project: Path, fake_embeddings: FakeEmbeddings
) -> None:
    env = _env(fake_embeddings, f"http://user:pw@127.0.0.1:{_closed_port()}")
    cli = Cli(FixedClock(NOW), cwd=project)
    assert cli("write", "release notes are drafted on Fridays", env=env).returncode == 0
    found = cli("search", "release notes", env=env)
    assert found.returncode == 0, found.stderr
    assert "the index is unavailable" in found.stdout
    failed = cli("index", env=env)
    assert failed.returncode != 0
    assert "cannot reach Milvus" in failed.stderr and "Traceback" not in failed.stderr
    status = json.loads(cli("status", "--json", env=env).stdout)
    assert status["backend"] == "milvus"
    assert "pw" not in status["index_uri"] and "user" not in status["index_uri"]
    assert "pw" not in json.dumps(status["index_health"])


def test_status_reports_health_of_a_lite_collection(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    mem = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        before = mem.status().index_health
        assert before["reachable"] and not before["exists"]
        mem.write("the API gateway retries idempotent calls twice")
        assert mem.sync().embedded_chunks == 1
        health = mem.status().index_health
        assert health["exists"] and health["rows"] == 1 and health["error"] is None
        assert health["collection"] == mem.collection
        from memlane.engine.reports import render_status

        text = render_status(mem.status())
        assert "index health     ok, collection" in text
    finally:
        mem.close()


def test_reindex_rebuilds_this_store_and_keeps_other_rows(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str, tmp_path: Path
) -> None:
    env = _env(fake_embeddings, lite)
    from helpers import make_project

    other = open_memory(
        make_project(tmp_path, "other-machine"),
        clock=clock,
        lexical=False,
        MEMLANE_INDEX_COLLECTION="team",
        **env,
    )
    mine = _memory(project, {**env, "MEMLANE_INDEX_COLLECTION": "team"}, clock)
    try:
        other.write("the other machine keeps its own notes")
        other.sync()
        mine.write("this machine pins the compiler version")
        mine.sync()
        assert mine.index.count() == 2  # one shared collection
        report = mine.reindex()
        assert report.embedded_chunks == 1  # this store's one chunk, again
        assert mine.index.count() == 2  # the other machine's row is still there
        hits = mine.search("other machine notes", mode="lexical").hits
        assert any("other machine" in h.content for h in hits)
    finally:
        other.close()
        mine.close()


def test_forget_removes_the_chunk_from_the_collection(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    mem = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        mem.write("the VPN password rotates monthly")
        mem.write("the build cache lives on the NAS")
        mem.sync()
        hit = mem.search("VPN password rotates", mode="lexical").hits[0]
        assert "VPN" in hit.content
        mem.forget(chunk_hash=hit.chunk_hash)
        assert mem.index.get(hit.chunk_hash) is None
        assert all("VPN" not in h.content for h in mem.search("VPN password").hits)
    finally:
        mem.close()


def test_migrate_from_sqlite_to_milvus_lite_and_back(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str, tmp_path: Path
) -> None:
    from memlane.engine.migrate import migrate, target_settings

    sqlite_env = {k: v for k, v in _env(fake_embeddings, lite).items() if "INDEX" not in k}
    mem = _memory(project, sqlite_env, clock)
    for text in ("the queue drains before deploys", "logs ship to the ELK cluster"):
        mem.write(text)
    mem.sync()
    embedded = len(fake_embeddings.requests)
    report = migrate(mem, target_settings(mem.config.index, lite))
    mem.close()
    assert (report.target_backend, report.reused, report.embedded) == ("milvus", 2, 0)
    assert len(fake_embeddings.requests) == embedded  # no text went to the embedder

    on_milvus = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        assert on_milvus.sync().embedded_chunks == 0
        assert "ELK" in on_milvus.search("ELK cluster logs", mode="lexical").hits[0].content
        back = migrate(
            on_milvus, target_settings(on_milvus.config.index, f"sqlite:{tmp_path / 's'}")
        )
    finally:
        on_milvus.close()
    assert (back.target_backend, back.reused, back.embedded) == ("sqlite", 2, 0)
