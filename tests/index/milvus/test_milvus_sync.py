"""The engine's real indexer over the Milvus index, with a real embedding
server on 127.0.0.1: a lost ledger costs a rescan, never an embedding of
what Milvus already holds."""

from __future__ import annotations

from pathlib import Path

from _lite import open_index

from fake_embedding import DIM, FakeEmbeddings
from memlane.embed.http import OpenAIEmbedder
from memlane.engine.journal.indexer import Indexer

MODEL = "fake-embed"
DAY = """# 2026-01-01

### 10:00
- the hot cache moved to Redis with 5 minute TTLs

### 11:00
- the Postgres pool was raised to 40 connections

### 12:00
- webhook tests pin the clock now
"""


def embedded_inputs(server: FakeEmbeddings) -> int:
    return sum(len(request["json"]["input"]) for request in server.requests)


def test_a_lost_ledger_rescans_and_embeds_nothing_milvus_holds(
    tmp_path: Path, lite_db: Path, collection: str, fake_embeddings: FakeEmbeddings
) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    (store / "2026-01-01.md").write_text(DAY)
    (store / "2026-01-02.md").write_text(DAY.replace("2026-01-01", "2026-01-02"))
    embedder = OpenAIEmbedder(fake_embeddings.base_url, MODEL)
    ledger = tmp_path / "index" / "ledger.sqlite"

    def sync() -> tuple[int, int]:
        index = open_index(lite_db, collection, ledger)
        index.ensure_model(MODEL, DIM)
        report = Indexer(store, index, MODEL, lambda: embedder).sync()
        count = index.count()
        index.close()
        return report.embedded_chunks, count

    embedded, count = sync()
    assert embedded == count > 0
    first = embedded_inputs(fake_embeddings)
    assert first == count

    for suffix in ("", "-wal", "-shm"):
        ledger.with_name(ledger.name + suffix).unlink(missing_ok=True)
    assert sync() == (0, count)
    assert embedded_inputs(fake_embeddings) == first

    # The ledger is whole again: an unchanged store is an idle sync.
    assert sync() == (0, count)

    # A changed file embeds only its new chunk.
    (store / "2026-01-02.md").write_text(
        DAY.replace("2026-01-01", "2026-01-02") + "\n### 13:00\n- a new note\n"
    )
    assert sync() == (1, count + 1)
    assert embedded_inputs(fake_embeddings) == first + 1
