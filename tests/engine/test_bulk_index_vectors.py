"""A bulk indexing pass leaves the index ready to search: its new vectors are
in the vector file the next process maps, so no search reads them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_embedding import FakeEmbeddings
from helpers import FixedClock, open_memory
from memlane.engine.journal import indexer as indexer_mod
from memlane.index.legs import vector_file


def _embedding_env(server: FakeEmbeddings) -> dict[str, str]:
    return {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embed",
    }


NOTES = [f"the release train {i} ships the billing exporter fix" for i in range(6)]


@pytest.mark.parametrize("bulk", [True, False])
def test_a_bulk_pass_writes_the_vector_file_and_a_small_one_leaves_it_to_search(
    project: Path,
    fake_embeddings: FakeEmbeddings,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    bulk: bool,
) -> None:
    monkeypatch.setattr(indexer_mod, "BULK_WRITE_VECTORS", 5 if bulk else 100)
    with open_memory(project, clock=clock, lexical=False, **_embedding_env(fake_embeddings)) as mem:
        for note in NOTES:
            mem.write(note)
        report = mem.sync()
        assert report.embedded_chunks == len(NOTES)
        path = vector_file.path_for(mem.internals.index_path)
        assert path.is_file() is bulk
        matrix = mem.index.dense_matrix  # type: ignore[attr-defined]
        assert (matrix is not None and len(matrix) == len(NOTES)) is bulk
    with open_memory(project, clock=clock, lexical=False, **_embedding_env(fake_embeddings)) as mem:
        assert len(mem.search("billing exporter release").hits) > 0
        assert path.is_file()  # written by the pass, or by this first search
