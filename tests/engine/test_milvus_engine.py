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


def test_status_says_milvus_needs_an_embedder(project: Path, clock: FixedClock, lite: str) -> None:
    mem = open_memory(
        project, clock=clock, MEMLANE_INDEX_BACKEND="milvus", MEMLANE_INDEX_URI=lite
    )  # lexical: embedding.provider none
    try:
        mem.write("a note that has no vector")
        report = mem.sync()
        assert report.unembedded_chunks == 1
        (line,) = [m for m in mem.status().missing if "stores a vector" in m]
        assert "embedding.provider" in line and "index.backend sqlite" in line
    finally:
        mem.close()


def _memsearch_row(client: object, collection: str, source: str, text: str, dim: int) -> str:
    """A row as memsearch writes it: its fields only, no memlane_* metadata."""
    import hashlib

    import numpy as np

    chunk_hash = hashlib.sha256(f"{source}:{text}".encode()).hexdigest()[:16]
    vector = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    client.upsert(  # type: ignore[attr-defined]
        collection_name=collection,
        data=[
            {
                "chunk_hash": chunk_hash,
                "embedding": vector.tolist(),
                "content": text,
                "source": source,
                "heading": "",
                "heading_level": 0,
                "start_line": 1,
                "end_line": 1,
            }
        ],
    )
    return chunk_hash


def test_rows_of_files_memlane_does_not_index_survive_a_fresh_ledger_and_reindex(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    """memsearch indexes MEMORY.md, memlane's walk skips it: memlane must not
    take it for a file of its own that went away."""
    from fake_embedding import DIM
    from memlane.core.paths import index_dir
    from memlane.index.milvus.connection import LITE

    mem = _memory(project, _env(fake_embeddings, lite), clock)
    mem.write("the deploy key lives in the vault")
    mem.sync()
    memory_md = mem.scope.store / "MEMORY.md"
    memory_md.write_text("- [Deploys](topics/deploys.md) — how we ship\n")
    path = Path(lite).absolute()
    client = LITE.acquire(path, ())
    try:
        kept = _memsearch_row(client, mem.collection, str(memory_md), "how we ship", DIM)
    finally:
        LITE.release(path)
    mem.close()
    for ledger in index_dir().glob("*.milvus-ledger.sqlite*"):
        ledger.unlink()  # a lost ledger: the next run learns from the collection

    again = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        report = again.sync()
        assert report.removed_files == 0 and report.embedded_chunks == 0
        assert again.index.get(kept) is not None
        again.reindex()
        assert again.index.get(kept) is not None  # reindex rebuilt only memlane's files
        assert again.search("deploy key vault", mode="lexical").hits
    finally:
        again.close()


def test_reindex_keeps_a_sibling_store_whose_path_starts_the_same(
    tmp_path: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    from helpers import make_project

    env = {**_env(fake_embeddings, lite), "MEMLANE_INDEX_COLLECTION": "shared"}
    first = make_project(tmp_path, "proj")
    second = make_project(tmp_path, "proj-2")
    # b's store path starts with a's: /t/m/memory and /t/m/memory-2/memory.
    a = open_memory(first, clock=clock, lexical=False, MEMSEARCH_DIR=str(tmp_path / "m"), **env)
    b = open_memory(
        second,
        clock=clock,
        lexical=False,
        MEMSEARCH_DIR=str(tmp_path / "m" / "memory-2"),
        **env,
    )
    try:
        assert str(b.scope.store).startswith(str(a.scope.store))
        a.write("proj keeps its migrations in db/")
        b.write("proj-2 keeps its migrations in sql/")
        a.sync()
        b.sync()
        a.reindex()
        hits = b.search("migrations sql", mode="lexical").hits
        assert any("sql/" in h.content for h in hits)
    finally:
        a.close()
        b.close()


def test_without_the_milvus_extra_the_error_says_how_to_install(
    project: Path,
    fake_embeddings: FakeEmbeddings,
    clock: FixedClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from memlane.index.protocol import IndexUnavailableError

    monkeypatch.setitem(sys.modules, "pymilvus", None)  # import pymilvus fails
    mem = _memory(project, _env(fake_embeddings, str(tmp_path / "fresh.db")), clock)
    try:
        mem.write("written without a Milvus client installed")
        with pytest.raises(IndexUnavailableError) as caught:
            mem.sync()
        assert "pymilvus is not installed" in caught.value.message
        assert caught.value.hint is not None and "memlane[milvus]" in caught.value.hint
        result = mem.search("Milvus client")
        assert any("memlane[milvus]" in n for n in result.notices)
    finally:
        mem.close()


def test_a_collection_memsearch_creates_later_is_not_embedded_again(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    """memlane looked first (no database yet); memsearch then created and
    filled the collection: memlane takes its rows over instead of embedding."""
    from fake_embedding import DIM, unit
    from memlane.core.types import embedding_text_of
    from memlane.index.milvus import schema
    from memlane.index.milvus.connection import LITE
    from memlane.store.chunker import chunk_markdown

    mem = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        entry = mem.write("the staging cluster scales to zero at night")
        assert mem.index.files() == {}  # a read before the database exists
        path = Path(lite).absolute()
        client = LITE.acquire(path, ())
        try:  # memsearch creates the collection and indexes the file
            schema.create(client, mem.collection, DIM)
            rows = [
                {
                    "chunk_hash": c.chunk_hash,
                    "embedding": unit(embedding_text_of(c.content)).tolist(),
                    "content": c.content,
                    "source": c.source,
                    "heading": c.heading,
                    "heading_level": c.heading_level,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                }
                for c in chunk_markdown(
                    Path(entry.path).read_text(), entry.path, mem.embedding.model
                )
            ]
            client.upsert(collection_name=mem.collection, data=rows)
        finally:
            LITE.release(path)
        calls = len(fake_embeddings.requests)
        report = mem.sync()
        assert report.embedded_chunks == 0
        assert len(fake_embeddings.requests) == calls  # nothing went to the embedder
        assert mem.search("staging cluster scales", mode="lexical").hits
    finally:
        mem.close()


def test_search_all_reads_the_other_projects_collections(
    tmp_path: Path,
    fake_embeddings: FakeEmbeddings,
    clock: FixedClock,
    lite: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from helpers import make_project

    root = tmp_path / "work"
    env = _env(fake_embeddings, lite)
    here = make_project(root, "api")
    there = make_project(root, "billing")
    never = make_project(root, "docs")  # noqa: F841 - a project nobody indexed
    other = open_memory(there, clock=clock, lexical=False, **env)
    other.write("billing retries failed card charges three times")
    other.sync()
    other.close()
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    mem = _memory(here, env, clock)
    try:
        mem.write("the api rate limit is 100 requests a minute")
        mem.sync()
        result = mem.search("card charges retries", scope="all", mode="lexical")
        labels = {hit.project for hit in result.hits}
        assert str(there) in labels
        top = next(hit for hit in result.hits if hit.project == str(there))
        assert "card charges" in top.content
        from memlane.engine.recall.crossrepo import expand_in_project

        section = expand_in_project(mem, top.chunk_hash, str(there))
        assert "three times" in section.content
    finally:
        mem.close()


def test_the_state_file_names_a_lite_database_by_its_path(
    project: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock, lite: str
) -> None:
    """memsearch writes ``milvus_uri`` as the bare path: so does memlane."""
    from memlane.index import state

    mem = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        mem.write("the state file is shared with memsearch")
        mem.sync()
        recorded = state.load(mem.scope.state_path)
        assert recorded["milvus_uri"] == str(Path(lite).absolute())
        assert recorded["collection"] == mem.collection
    finally:
        mem.close()


def test_a_search_embeds_its_query_while_milvus_runs_the_lexical_leg(
    project: Path,
    fake_embeddings: FakeEmbeddings,
    clock: FixedClock,
    lite: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The query's embedding request is answered only once the BM25 search
    has reached Milvus: a search that embedded first would wait here in vain
    (and find the flag unset); one that overlaps the two gets a hybrid
    answer. A failing embedder meanwhile still gives the lexical answer and
    says why."""
    import threading

    from pymilvus import MilvusClient

    from fake_embedding import Reply, normal_body
    from memlane.index.milvus import schema

    lexical_sent = threading.Event()
    plain_search = MilvusClient.search

    def watched_search(self: MilvusClient, *args: object, **kwargs: object) -> object:
        if kwargs.get("anns_field") == schema.SPARSE:
            lexical_sent.set()
        return plain_search(self, *args, **kwargs)

    monkeypatch.setattr(MilvusClient, "search", watched_search)
    mem = _memory(project, _env(fake_embeddings, lite), clock)
    try:
        mem.write("the staging cluster scales to zero at night")
        mem.write("invoices are exported nightly as CSV files")
        mem.sync()
        lexical_sent.clear()
        seen: list[bool] = []

        def after_the_lexical_leg(inputs: list[str]) -> Reply:
            seen.append(lexical_sent.wait(60))
            return Reply(body=normal_body(inputs))

        fake_embeddings.then(after_the_lexical_leg)
        result = mem.search("staging cluster at night")
        assert seen == [True]
        assert result.mode == "hybrid"
        assert "scales to zero at night" in result.hits[0].content

        fake_embeddings.then(*[Reply(status=503)] * 20)
        result = mem.search("invoices exported nightly")
        assert result.mode == "lexical"
        assert "exported nightly" in result.hits[0].content
        assert any(n.startswith("semantic search unavailable") for n in result.notices)
    finally:
        mem.close()
