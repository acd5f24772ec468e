"""The viewer on the Milvus backend (a real Milvus Lite database, the fake
embedding server on 127.0.0.1): a shared collection's chunks of another
store are shown as found, with nothing to expand, open or forget here."""

from __future__ import annotations

from pathlib import Path

import pytest
from _web import BASE_URL
from starlette.testclient import TestClient

from fake_embedding import DIM, FakeEmbeddings, unit
from helpers import FixedClock, open_memory
from memlane.hosts.web.app import build_app
from memlane.hosts.web.viewer import Viewer

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")


def test_a_shared_collections_foreign_chunk_is_read_only(
    project: Path, tmp_path: Path, fake_embeddings: FakeEmbeddings, clock: FixedClock
) -> None:
    from memlane.index.milvus.connection import LITE

    lite = tmp_path / "milvus.db"
    mem = open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=fake_embeddings.base_url,
        MEMLANE_EMBEDDING_MODEL="fake-embed",
        MEMLANE_INDEX_BACKEND="milvus",
        MEMLANE_INDEX_URI=str(lite),
    )
    mem.write("our zebra rotation happens on Mondays")
    mem.sync()
    foreign = "/other/machine/.memsearch/memory/2026-11-30.md"
    client_of = LITE.acquire(lite.absolute(), ())
    try:
        client_of.upsert(
            collection_name=mem.collection,
            data=[
                {
                    "chunk_hash": "00ff00ff00ff00ff",
                    "embedding": unit("their zebra rotation", DIM).tolist(),
                    "content": "their zebra rotation happens on Fridays",
                    "source": foreign,
                    "heading": "",
                    "heading_level": 0,
                    "start_line": 1,
                    "end_line": 1,
                    "memlane_kind": "journal",
                    "memlane_date": "2026-11-30",
                    "memlane_session": "",
                }
            ],
        )
    finally:
        LITE.release(lite.absolute())
    viewer = Viewer(mem)
    try:
        base = f"{BASE_URL}/{viewer.keys.token}"
        with TestClient(build_app(viewer), base_url=base) as client:
            page = client.get("/search", params={"q": "zebra rotation", "mode": "lexical"}).text
    finally:
        viewer.close()
    articles = [a.split("</article>", 1)[0] for a in page.split("<article")[1:]]
    (ours,) = [a for a in articles if "Mondays" in a]
    (theirs,) = [a for a in articles if "Fridays" in a]
    assert 'class="forget"' in ours and 'class="expand"' in ours  # this store's: every action
    assert "from another store" in theirs
    assert 'class="forget"' not in theirs and 'class="expand"' not in theirs
    assert "/day/" not in theirs
