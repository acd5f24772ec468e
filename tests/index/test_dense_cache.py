"""The in-process vector matrix: reuse, incremental refresh, reload."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for

from memlane.index.legs import dense as dense_mod
from memlane.index.legs.dense import DenseMatrix, DenseRow, vector_to_blob
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite import notes as sqlite_mod
from memlane.index.sqlite.notes import SqliteIndex

NO_WORDS = "zzzqqq"  # matches nothing lexically: results come from the dense leg only


def dense_ranking(idx: SqliteIndex, query_vec: np.ndarray, k: int = 200) -> list[str]:
    _mode, hits = idx.search(NO_WORDS, query_vec, k)
    return [h.chunk.chunk_hash for h in hits]


def db_vector_hashes(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT chunk_hash FROM chunks WHERE vector IS NOT NULL")
        return {r[0] for r in rows}
    finally:
        conn.close()


def test_matrix_is_reused_while_generation_unchanged(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), ["- one", "- two"])
    index.replace_file(record, chunks, vectors_for(chunks))
    assert index.dense_matrix is None  # nothing loaded before a dense search
    index.search("one", unit_vector("q"), 3)
    first = index.dense_matrix
    assert first is not None and len(first) == 2
    generation = first.generation
    index.search("two", unit_vector("q2"), 3)
    assert index.dense_matrix is first and first.generation == generation
    index.search("two", None, 3)  # lexical search never touches the matrix
    assert index.dense_matrix is first
    # a write moves the generation: the same matrix is patched, not reloaded
    record, chunks = make_file(src(tmp_path, "b.md"), ["- three"])
    index.replace_file(record, chunks, vectors_for(chunks))
    index.search("three", unit_vector("q3"), 3)
    assert index.dense_matrix is first and len(first) == 3
    assert first.generation > generation


def test_other_connection_writes_are_seen(index_path: Path, tmp_path: Path) -> None:
    reader = SqliteIndex(index_path)
    writer = SqliteIndex(index_path)
    try:
        writer.ensure_model(MODEL, DIM)
        rec_a, ca = make_file(src(tmp_path, "a.md"), ["- alpha"])
        writer.replace_file(rec_a, ca, vectors_for(ca))
        q = unit_vector("- beta")
        assert dense_ranking(reader, q) == [ca[0].chunk.chunk_hash]
        rec_b, cb = make_file(src(tmp_path, "b.md"), ["- beta"])
        writer.replace_file(rec_b, cb, vectors_for(cb))
        assert dense_ranking(reader, q)[0] == cb[0].chunk.chunk_hash
        writer.remove_files([rec_b.source])
        assert dense_ranking(reader, q) == [ca[0].chunk.chunk_hash]
        # a vector filled in later by set_vectors
        rec_c, cc = make_file(src(tmp_path, "c.md"), ["- gamma"])
        writer.replace_file(rec_c, cc, {})
        assert len(dense_ranking(reader, q)) == 1
        writer.set_vectors(vectors_for(cc))
        assert len(dense_ranking(reader, q)) == 2
        # a model change elsewhere empties the reader's view
        writer.ensure_model("other", DIM)
        assert reader.search("alpha", q, 3) == ("lexical", [])
    finally:
        reader.close()
        writer.close()


def test_incremental_refresh_matches_full_reload(index_path: Path, tmp_path: Path) -> None:
    rng = random.Random(7)
    reader = SqliteIndex(index_path)
    writer = SqliteIndex(index_path)
    writer.ensure_model(MODEL, DIM)
    sources = [src(tmp_path, f"f{i}.md") for i in range(6)]
    q = unit_vector("query")
    try:
        for step in range(60):
            source = rng.choice(sources)
            op = rng.random()
            if op < 0.6:
                texts = [f"- note {rng.randrange(30)}" for _ in range(rng.randrange(1, 6))]
                record, chunks = make_file(source, texts)
                with_vec = {h: v for h, v in vectors_for(chunks).items() if rng.random() < 0.8}
                writer.replace_file(record, chunks, with_vec)
            elif op < 0.8:
                writer.remove_files([source])
            else:
                missing = writer.missing_vectors()
                writer.set_vectors({h: unit_vector(h) for h, _ in missing[:3]})
            if step % 3 == 0:
                incremental = dense_ranking(reader, q)
                with SqliteIndex(index_path) as fresh:
                    assert incremental == dense_ranking(fresh, q), step
                assert set(incremental) == db_vector_hashes(index_path)
    finally:
        reader.close()
        writer.close()


def test_pruned_tombstones_force_a_full_reload(
    index_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_mod, "TOMBSTONE_KEEP_GENERATIONS", 2)
    monkeypatch.setattr(sqlite_mod, "TOMBSTONE_PRUNE_EVERY", 1)
    reader = SqliteIndex(index_path)
    writer = SqliteIndex(index_path)
    writer.ensure_model(MODEL, DIM)
    q = unit_vector("q")
    try:
        rec, chunks = make_file(src(tmp_path, "a.md"), ["- a", "- b"])
        writer.replace_file(rec, chunks, vectors_for(chunks))
        assert len(dense_ranking(reader, q)) == 2
        stale = reader.dense_matrix
        assert stale is not None
        for i in range(5):  # deletes, then generations move past the kept window
            rec, chunks = make_file(src(tmp_path, "a.md"), [f"- c{i}"])
            writer.replace_file(rec, chunks, vectors_for(chunks))
        assert set(dense_ranking(reader, q)) == db_vector_hashes(index_path)
        assert reader.dense_matrix is not stale  # rebuilt, not patched
    finally:
        reader.close()
        writer.close()


def _row(
    rowid: int,
    *,
    kind: str = "journal",
    source: str = "/a.md",
    date: str | None = None,
    session: str | None = None,
) -> DenseRow:
    return DenseRow(rowid, vector_to_blob(unit_vector(str(rowid), 4)), kind, source, date, session)


def test_dense_matrix_add_remove_replace_and_compact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense_mod, "COMPACT_DEAD_MIN", 3)
    m = DenseMatrix(4, "e", 0)
    m.add([_row(i) for i in range(1, 11)])
    assert len(m) == 10
    q = unit_vector("5", 4)
    assert m.top(q, 1) == [5]
    m.remove([5, 99])
    assert len(m) == 9 and 5 not in m.top(q, 10)
    m.add([_row(5)])  # re-added with the same rowid
    assert m.top(q, 1) == [5]
    m.add([DenseRow(5, vector_to_blob(unit_vector("other", 4)), "journal", "/a.md", None, None)])
    assert len(m) == 10  # replaced, not duplicated
    assert m.dead_rows == 2  # 5 and the replaced 5: masked, below the threshold
    m.remove([1, 2, 3])  # crosses the compaction threshold
    assert len(m) == 7 and m.dead_rows == 0
    assert sorted(m.top(q, 100)) == [4, 5, 6, 7, 8, 9, 10]


def test_dense_matrix_filters() -> None:
    m = DenseMatrix(4, "e", 0)
    m.add(
        [
            _row(1, kind="topic", source="/x/topics/a.md"),
            _row(2, date="2026-01-01", session="s1"),
            _row(3, date="2026-01-02T10:30", session="s2", source="/x/2026-01-02.md"),
            _row(4, kind="session", date="2026-01-03"),
        ]
    )
    q = unit_vector("q", 4)

    def ids(**kw: str) -> set[int]:
        return set(m.top(q, 10, SearchFilters(**kw)))  # type: ignore[arg-type]

    assert ids(kind="topic") == {1}
    assert ids(kind="session") == {4}
    assert ids(source_prefix="/x/") == {1, 3}
    assert ids(session="s2") == {3}
    assert ids(session="none") == set()
    assert ids(after="2026-01-02") == {3, 4}
    assert ids(before="2026-01-02T11") == {2, 3}
    assert ids(after="2026-01-01", before="2026-01-02") == {2}
    assert m.top(q, 0) == []
