"""legs/exact_cache.py: the float32 vectors a search rescored with, kept
for the next search of the process, and never kept past a change of the row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _builders import DIM, make_file, src, unit_vector, vectors_for

from memlane.index.legs.exact_cache import ExactCache
from memlane.index.sqlite.notes import SqliteIndex

NO_WORDS = "zzzqqq"  # matches nothing lexically: the dense leg alone ranks


class CountingReader:
    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def __call__(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        self.asked.append(list(rowids))
        return {r: np.full(4, float(r), dtype=np.float32) for r in rowids if r % 2 == 0}


def test_kept_rows_are_not_read_again_and_rows_without_a_vector_are_left_out() -> None:
    cache, read = ExactCache(4), CountingReader()
    first = cache.vectors([2, 3, 4], read)
    assert sorted(first) == [2, 4]
    again = cache.vectors([4, 2, 6, 3], read)
    assert sorted(again) == [2, 4, 6] and float(again[6][0]) == 6.0
    assert read.asked == [[2, 3, 4], [6, 3]]  # a row without a vector is asked each time


def test_the_cache_is_bounded_and_drops_its_oldest_rows_first() -> None:
    cache, read = ExactCache(4, max_bytes=3 * 4 * 4), CountingReader()
    assert cache.capacity == 3
    cache.vectors([2, 4, 6, 8], read)
    assert len(cache) == 3
    read.asked.clear()
    cache.vectors([2, 8], read)
    assert read.asked == [[2]]  # 2 was the oldest, dropped for 8


def test_a_forgotten_row_is_read_again() -> None:
    cache, read = ExactCache(4), CountingReader()
    cache.vectors([2, 4], read)
    cache.forget([4, 10])
    read.asked.clear()
    cache.vectors([2, 4], read)
    assert read.asked == [[4]]


def test_a_search_after_a_vectors_rewrite_scores_the_new_vector(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), [f"- entry {i}" for i in range(8)])
    index.replace_file(record, chunks, vectors_for(chunks))
    target = chunks[3].chunk.chunk_hash
    query = vectors_for([chunks[3]])[target]
    _mode, hits = index.search(NO_WORDS, query, 3)
    assert hits[0].chunk.chunk_hash == target and hits[0].score > 0.99
    matrix = index.dense_matrix
    assert matrix is not None and len(matrix.exact_cache) > 0  # kept for the next search

    index.set_vectors({target: unit_vector("somewhere else entirely", DIM)})
    _mode, hits = index.search(NO_WORDS, query, 8)
    assert hits[0].chunk.chunk_hash != target
    # Scored as a process with nothing kept scores it: from the new vector.
    with SqliteIndex(index_path) as fresh:
        _mode, expected = fresh.search(NO_WORDS, query, 8)
    assert [(h.chunk.chunk_hash, h.score) for h in hits] == [
        (h.chunk.chunk_hash, h.score) for h in expected
    ]
