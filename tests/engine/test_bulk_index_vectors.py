"""A bulk indexing pass leaves the index ready to search: its new vectors are
in the vector file the next process maps, so no search reads them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fake_embedding import FakeEmbeddings
from helpers import FixedClock, open_memory
from memlane.engine.journal import indexer as indexer_mod
from memlane.index.legs import dense_sync, vector_file


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


def test_a_small_pass_in_a_process_that_searches_folds_the_tail_into_the_vector_file(
    project: Path,
    fake_embeddings: FakeEmbeddings,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm engine indexes each capture in a small pass: when the rows
    written since its vector file outgrow it, that pass writes the new file,
    on the indexer's thread, and the next search only maps it."""
    monkeypatch.setattr(indexer_mod, "BULK_WRITE_VECTORS", 100)
    monkeypatch.setattr(dense_sync, "REBASE_MIN_ROWS", 2)
    with open_memory(project, clock=clock, lexical=False, **_embedding_env(fake_embeddings)) as mem:
        for note in NOTES:
            mem.write(note)
        mem.sync()
        path = vector_file.path_for(mem.internals.index_path)
        assert len(mem.search("billing exporter release").hits) > 0
        first = _file_generation(mem, path)  # written by that first search
        for i in range(4):
            mem.write(f"the invoice queue {i} drains before the nightly export")
        report = mem.sync()
        assert report.embedded_chunks == 4
        folded = _file_generation(mem, path)
        assert folded > first  # the pass wrote it ...
        assert len(mem.search("invoice queue drains").hits) > 0
        assert _file_generation(mem, path) == folded  # ... and the search only used it
        matrix = mem.index.dense_matrix  # type: ignore[attr-defined]
        assert matrix is not None and matrix.mapped and len(matrix) == len(NOTES) + 4


def _file_generation(mem: Any, path: Path) -> int:
    matrix = mem.index.dense_matrix
    snapshot = vector_file.open_snapshot(path, epoch=matrix.epoch, dimension=matrix.dimension)
    assert snapshot is not None
    return int(snapshot.generation)
