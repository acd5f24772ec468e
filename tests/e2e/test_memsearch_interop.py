"""memlane on Milvus and the real memsearch share one collection.

One store (``<tmp>/proj/.memsearch/memory``), one Milvus Lite database, one
collection, one embedding endpoint (memsearch_harness.Mesh): what one tool
indexes the other finds under the same chunk hash and does not embed again;
what one removes is gone for the other; ``.index-state.json`` stays readable
by both; the tools take turns on the database (Milvus Lite admits one
process at a time) without either reporting it locked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memsearch_harness import Mesh

from embed_server import EmbedServer
from helpers import wait_for
from memlane.core.locks import lock_fd
from memlane.core.scope import collection_name

pytestmark = pytest.mark.e2e

MONDAY = """# 2026-11-30

## Session 10:00

### 10:00
<!-- session:s-mon turn:t1 transcript:/tmp/t/s-mon.jsonl -->
- moved the hot cache to Redis with five minute TTLs after the eviction storm

### 10:20
<!-- session:s-mon turn:t2 transcript:/tmp/t/s-mon.jsonl -->
- pinned numpy below 3 because the onnxruntime wheels lag behind
"""

TUESDAY = """# 2026-12-01

## Session 09:00

### 09:00
<!-- session:s-tue turn:t3 transcript:/tmp/t/s-tue.jsonl -->
- the invoice exporter now streams rows to S3 instead of buffering the whole month
"""

REDIS = "Redis cache TTL eviction"
NUMPY = "numpy pin onnxruntime wheels"
INVOICE = "invoice exporter streams rows to S3"


@pytest.fixture
def mesh(tmp_path: Path, memsearch_python: Path, embedding_endpoint: EmbedServer) -> Mesh:
    """A fresh project; memlane is told the collection name (index.collection)."""
    return Mesh(tmp_path, memsearch_python, embedding_endpoint.base_url, "ms_interop_shared")


@pytest.fixture
def derived_mesh(tmp_path: Path, memsearch_python: Path, embedding_endpoint: EmbedServer) -> Mesh:
    """A fresh project; memlane derives the collection name, memsearch is given it (its plugins')."""
    mesh = Mesh(tmp_path, memsearch_python, embedding_endpoint.base_url, "", set_collection=False)
    mesh.collection = collection_name(mesh.project)
    return mesh


def top_hash(hits: list[dict[str, object]], needle: str) -> str:
    """The chunk hash of the first hit whose content holds *needle*."""
    for hit in hits:
        if needle in str(hit["content"]):
            return str(hit["chunk_hash"])
    raise AssertionError(f"no hit holds {needle!r}: {[h['content'] for h in hits]}")


def test_memsearch_writes_the_chunk_hashes_memlane_computes(mesh: Mesh) -> None:
    daily = mesh.write("2026-11-30.md", MONDAY)
    assert mesh.rows() is None  # no collection until a tool writes one
    assert mesh.memsearch_index() == 2
    ours = mesh.memlane_json("chunks", str(daily))
    rows = mesh.rows("source", "start_line", "end_line") or []
    assert {(r["chunk_hash"], r["start_line"], r["end_line"]) for r in rows} == {
        (c["chunk_hash"], c["start_line"], c["end_line"]) for c in ours
    }
    assert {r["source"] for r in rows} == {str(daily)}


def test_memlane_indexes_and_memsearch_finds_the_same_chunk_hashes(derived_mesh: Mesh) -> None:
    mesh = derived_mesh
    mesh.write("2026-11-30.md", MONDAY)
    report = mesh.memlane_index()
    assert report["embedded_chunks"] == report["total_chunks"] == 2

    ours = mesh.memlane_hits(REDIS)
    theirs = mesh.memsearch_hits(REDIS)
    assert top_hash(theirs, "Redis") == top_hash(ours, "Redis")
    # memlane leaves out hits below search.min_score; memsearch returns every row it ranks.
    assert {h["chunk_hash"] for h in ours} <= {h["chunk_hash"] for h in theirs}
    # memsearch reads rows that carry memlane's filter fields (dynamic fields) without a hitch.
    rows = mesh.rows("source", "memlane_kind", "memlane_date", "memlane_session")
    assert rows is not None and len(rows) == 2
    assert {r["memlane_kind"] for r in rows} == {"journal"}
    assert {r["memlane_session"] for r in rows} == {"s-mon"}
    assert all(str(r["memlane_date"]).startswith("2026-11-30") for r in rows)
    # And memsearch, indexing the same store, finds nothing to embed: ids identical.
    assert mesh.memsearch_index() == 0
    assert len(mesh.hashes()) == 2


def test_memsearch_indexes_and_memlane_finds_it_without_embedding_again(
    mesh: Mesh, embedding_endpoint: EmbedServer
) -> None:
    mesh.write("2026-11-30.md", MONDAY)
    mesh.memlane_index()
    mesh.write("2026-12-01.md", TUESDAY)
    assert mesh.memsearch_index() == 1  # only the new file's chunk: memlane's two are reused
    theirs = top_hash(mesh.memsearch_hits(INVOICE), "invoice exporter")

    texts_before = embedding_endpoint.stats()["texts"]
    report = mesh.memlane_index()
    assert report["embedded_chunks"] == 0
    assert report["total_chunks"] == 3
    assert embedding_endpoint.stats()["texts"] == texts_before  # nothing went to the model
    # memsearch's row now carries memlane's metadata (its own vector reused), so the
    # filters see it.
    rows = {
        r["chunk_hash"]: r for r in mesh.rows("source", "memlane_kind", "memlane_session") or []
    }
    assert rows[theirs]["memlane_kind"] == "journal"
    assert rows[theirs]["memlane_session"] == "s-tue"
    hits = mesh.memlane_json("search", INVOICE, "--session", "s-tue")["hits"]
    assert top_hash(hits, "invoice exporter") == theirs


def test_a_chunk_memlane_removes_is_gone_for_memsearch(mesh: Mesh) -> None:
    daily = mesh.write("2026-11-30.md", MONDAY)
    mesh.memlane_index()
    numpy_hash = top_hash(mesh.memsearch_hits(NUMPY), "numpy")

    # The last entry goes (the lines of the others stay, so do their ids).
    daily.write_text(MONDAY.split("### 10:20")[0].rstrip() + "\n", encoding="utf-8")
    report = mesh.memlane_index()
    assert report["total_chunks"] == 1
    assert numpy_hash not in mesh.hashes()
    assert numpy_hash not in {h["chunk_hash"] for h in mesh.memsearch_hits(NUMPY)}
    assert mesh.memsearch_index() == 0


def test_a_chunk_memsearch_removes_is_gone_for_memlane(mesh: Mesh) -> None:
    daily = mesh.write("2026-11-30.md", MONDAY)
    mesh.memsearch_index()
    numpy_hash = top_hash(mesh.memlane_hits(NUMPY), "numpy")

    daily.write_text(MONDAY.split("### 10:20")[0].rstrip() + "\n", encoding="utf-8")
    mesh.memsearch_index()
    assert numpy_hash not in mesh.hashes()
    assert numpy_hash not in {h["chunk_hash"] for h in mesh.memlane_hits(NUMPY)}
    report = mesh.memlane_index()
    assert report["embedded_chunks"] == 0
    assert report["total_chunks"] == 1


def test_memlane_forget_removes_the_chunk_for_memsearch(mesh: Mesh) -> None:
    mesh.write("2026-11-30.md", MONDAY)
    mesh.write("2026-12-01.md", TUESDAY)
    mesh.memsearch_index()
    redis_hash = top_hash(mesh.memsearch_hits(REDIS), "Redis")

    removed = mesh.memlane_json("forget", redis_hash)
    assert "Redis" in str(removed)
    assert "Redis" not in (mesh.store / "2026-11-30.md").read_text(encoding="utf-8")
    assert redis_hash not in mesh.hashes()
    assert redis_hash not in {h["chunk_hash"] for h in mesh.memsearch_hits(REDIS)}
    assert redis_hash not in {h["chunk_hash"] for h in mesh.memlane_hits(REDIS)}


def test_the_index_state_file_stays_valid_for_both(mesh: Mesh) -> None:
    mesh.write("2026-11-30.md", MONDAY)
    mesh.memlane_index()
    read = mesh.memsearch_state()
    assert read["path"] == str(mesh.project / ".memsearch" / ".index-state.json")
    state = read["state"]  # memsearch's reader takes memlane's file
    assert state["schema_version"] == 1
    assert state["status"] == "ok"
    assert state["collection"] == mesh.collection
    assert state["indexed_chunks"] == 2
    assert state["paths"] == [str(mesh.store)]
    memlane_success = state["last_success_at"]

    mesh.write("2026-12-01.md", TUESDAY)
    mesh.memsearch_index()  # memsearch carries memlane's record over and writes its own
    status = mesh.memlane_json("status")
    assert status["index_state_path"] == read["path"]
    theirs = status["index_state"]  # memlane's reader takes memsearch's file
    assert theirs["status"] == "ok"
    assert theirs["collection"] == mesh.collection
    assert theirs["indexed_chunks"] == 1
    assert theirs["last_success_at"] >= memlane_success

    mesh.memlane_index()
    again = mesh.memsearch_state()["state"]
    assert again["status"] == "ok"
    assert again["schema_version"] == 1
    assert again["collection"] == mesh.collection


def test_back_to_back_runs_find_the_database_unlocked(mesh: Mesh) -> None:
    """No pause between the tools: each one's exit (or linger) has let the database go."""
    mesh.write("2026-11-30.md", MONDAY)
    runs = [
        mesh.memlane("index", "--json"),
        mesh.memsearch("search", REDIS, "-k", "3"),
        mesh.memlane("search", REDIS, "--json"),
        mesh.memsearch("index", str(mesh.store)),
        mesh.memlane("search", NUMPY, "--json"),
        mesh.memsearch("search", NUMPY, "-k", "3"),
    ]
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "locked" not in (done.stdout + done.stderr).lower()
    assert "numpy" in runs[-1].stdout


def test_a_database_memsearch_holds_is_reported_locked_and_nothing_is_lost(mesh: Mesh) -> None:
    """memsearch watch keeps the Lite database open: memlane says so, in one line, and waits its turn."""
    mesh.write("2026-11-30.md", MONDAY)
    mesh.memlane_index()
    with mesh.memsearch_watch():
        mesh.write("2026-12-01.md", TUESDAY)
        done = mesh.memlane("index")
        assert done.returncode != 0
        assert "in use by another process (locked)" in done.stderr
        assert "Traceback" not in done.stderr
        searched = mesh.memlane("search", REDIS, "--json")  # the search says so instead of failing
        assert searched.returncode == 0, searched.stderr
        assert "locked" in searched.stdout + searched.stderr
    # Once memsearch has let go, the entry written meanwhile is indexed: nothing was lost.
    report = mesh.memlane_index()
    assert report["total_chunks"] == 3
    assert top_hash(mesh.memlane_hits(INVOICE), "invoice exporter") in mesh.hashes()


def test_a_long_lived_memlane_lets_memsearch_in_between_searches(
    mesh: Mesh, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Memory kept open (as the sidecar keeps it) holds the database only per operation."""
    from memlane.engine.project import Memory

    mesh.write("2026-11-30.md", MONDAY)
    for name, value in mesh.memlane_env().items():
        monkeypatch.setenv(name, value)
    memory = Memory.open(mesh.project)
    try:
        assert memory.search(REDIS, 3).hits
        lock = Path(mesh.uri) / "LOCK"
        # The database is let go within its short linger; then memsearch opens it.
        wait_for(lambda: _unlocked(lock), timeout=10, what="memlane released the Lite database")
        assert top_hash(mesh.memsearch_hits(NUMPY), "numpy")
        assert memory.search(NUMPY, 3).hits  # and memlane opens it again after memsearch
    finally:
        memory.close()


def _unlocked(lock: Path) -> bool:
    """Nobody holds the Lite database's LOCK (a probe of our own, released at once)."""
    fd = os.open(lock, os.O_RDWR)
    try:
        lock_fd(fd, wait=False)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
