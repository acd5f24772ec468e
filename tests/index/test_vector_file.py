"""The vector file beside an index: mapped by a new process, caught up,
rewritten as the index grows, never trusted past its epoch, and gone with
deleted text."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.core.settings import IndexSettings
from memlane.index.legs import dense_sync, int8, vector_file
from memlane.index.legs.dense import DenseMatrix, DenseRow, vector_to_blob
from memlane.index.legs.int8 import quantize
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite.notes import SqliteIndex
from memlane.index.sqlite.readonly import ReadOnlySqliteIndex
from memlane.index.sqlite.statements import keep_written_vectors, read_meta

NO_WORDS = "zzzqqq"  # matches nothing lexically: results come from the dense leg only


def fill(index: SqliteIndex, root: Path, files: int, per_file: int = 5) -> None:
    for f in range(files):
        texts = [f"- note {f} {i}" for i in range(per_file)]
        record, chunks = make_file(
            src(root, f"f{f:03d}.md"), texts, date=f"2026-01-{f % 28 + 1:02d}"
        )
        index.replace_file(record, chunks, vectors_for(chunks))


def dense_hits(index: SqliteIndex, query: np.ndarray, k: int = 50) -> list[tuple[str, float]]:
    _mode, hits = index.search(NO_WORDS, query, k)
    return [(hit.chunk.chunk_hash, hit.score) for hit in hits]


def stored_vectors(path: Path) -> dict[str, np.ndarray]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT chunk_hash, vector FROM chunks WHERE vector IS NOT NULL")
        return {h: np.frombuffer(blob, dtype="<f4") for h, blob in rows}
    finally:
        conn.close()


def epoch_of(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()[0])
    finally:
        conn.close()


def test_a_new_process_maps_the_vector_file_and_ranks_as_a_full_load(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    fill(index, tmp_path, 12)
    query = unit_vector("q")
    first = dense_hits(index, query)
    vectors_path = vector_file.path_for(index_path)
    assert vectors_path.is_file()  # the full load wrote it for the next process
    with SqliteIndex(index_path) as fresh:
        assert dense_hits(fresh, query) == first
        matrix = fresh.dense_matrix
        assert matrix is not None and matrix.mapped and len(matrix) == 60


def test_a_search_returns_the_float32_cosines(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    fill(index, tmp_path, 10)
    query = unit_vector("some query")
    by_hash = stored_vectors(index_path)
    expected = sorted(((float(np.dot(v, query)), h) for h, v in by_hash.items()), reverse=True)
    dense_hits(index, query)
    matrix = index.dense_matrix
    assert matrix is not None
    conn = sqlite3.connect(index_path)
    try:
        ids = dict(conn.execute("SELECT id, chunk_hash FROM chunks").fetchall())
        rescored = matrix.top_scored(
            query, 10, exact=lambda rowids: dense_sync.exact_vectors(conn, rowids)
        )
    finally:
        conn.close()
    assert [ids[rowid] for rowid, _ in rescored] == [h for _, h in expected[:10]]
    assert [c for _, c in rescored] == pytest.approx([c for c, _ in expected[:10]], abs=1e-6)
    # The int8 scan alone is close: within a code step of every cosine.
    approximate = dict(matrix.top_scored(query, 50))
    for rowid, cosine in rescored:
        assert approximate[rowid] == pytest.approx(cosine, abs=0.02)


def test_writes_after_the_file_are_caught_up(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    fill(index, tmp_path, 4)
    query = unit_vector("- note 1 1")
    dense_hits(index, query)  # writes the vector file at this generation
    record, chunks = make_file(src(tmp_path, "new.md"), ["- fresh words"])
    index.replace_file(record, chunks, vectors_for(chunks))
    index.remove_files([src(tmp_path, "f001.md")])
    with SqliteIndex(index_path) as fresh:
        got = {h for h, _ in dense_hits(fresh, query, 100)}
        matrix = fresh.dense_matrix
        assert matrix is not None and matrix.mapped
    assert got == set(stored_vectors(index_path))
    assert chunks[0].chunk.chunk_hash in got


def test_a_grown_tail_becomes_a_new_vector_file(
    index: SqliteIndex, index_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense_sync, "REBASE_MIN_ROWS", 8)
    fill(index, tmp_path, 4)
    query = unit_vector("q")
    dense_hits(index, query)
    before = vector_file.path_for(index_path).stat().st_ino
    fill(index, tmp_path / "more", 3)  # 15 rows written since the base
    hits = dense_hits(index, query, 100)
    matrix = index.dense_matrix
    assert matrix is not None and matrix.stale_rows == 0 and matrix.mapped
    assert vector_file.path_for(index_path).stat().st_ino != before
    assert {h for h, _ in hits} == set(stored_vectors(index_path))


def test_a_process_whose_tail_outgrew_its_base_maps_the_file_another_one_folded(
    index: SqliteIndex, index_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense_sync, "REBASE_MIN_ROWS", 8)
    fill(index, tmp_path, 4)
    query = unit_vector("q")
    with SqliteIndex(index_path) as other:
        dense_hits(index, query)  # writes the vector file
        dense_hits(other, query)  # maps it
        fill(index, tmp_path / "more", 3)  # 15 rows written since that base
        dense_hits(index, query)  # folds them into a new file
        path = vector_file.path_for(index_path)
        folded = vector_file.open_snapshot(path, epoch=epoch_of(index_path), dimension=DIM)
        assert folded is not None
        with path.open("rb"):  # held open: a file written now cannot reuse its inode
            written = path.stat().st_ino
            hits = dense_hits(other, query, 100)
            # The other process took that file instead of writing its own.
            assert path.stat().st_ino == written
        matrix = other.dense_matrix
        assert matrix is not None and matrix.mapped and matrix.stale_rows == 0
        assert matrix.base_generation == folded.generation
    assert {h for h, _ in hits} == set(stored_vectors(index_path))


def test_a_vector_file_of_another_epoch_is_never_used(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    fill(index, tmp_path, 3)
    dense_hits(index, unit_vector("q"))
    index.clear()
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "only.md"), ["- the only note"])
    index.replace_file(record, chunks, vectors_for(chunks))
    with SqliteIndex(index_path) as fresh:
        assert [h for h, _ in dense_hits(fresh, unit_vector("q"))] == [chunks[0].chunk.chunk_hash]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_vector_file_is_reloaded_and_rewritten(
    index: SqliteIndex, index_path: Path, tmp_path: Path, damage: str
) -> None:
    fill(index, tmp_path, 6)
    query = unit_vector("q")
    expected = dense_hits(index, query)
    path = vector_file.path_for(index_path)
    data = path.read_bytes()
    broken = {"truncated": data[: len(data) // 2], "garbage": b"x" * 400, "empty": b""}[damage]
    path.write_bytes(broken)
    with SqliteIndex(index_path) as fresh:
        assert dense_hits(fresh, query) == expected
    snapshot = vector_file.open_snapshot(path, epoch=epoch_of(index_path), dimension=DIM)
    assert snapshot is not None and snapshot.rows == 30


def test_a_vector_file_that_cannot_be_written_leaves_search_working(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    vector_file.path_for(index_path).mkdir()  # a rename onto a directory fails
    fill(index, tmp_path, 3)
    assert len(dense_hits(index, unit_vector("q"))) == 15
    matrix = index.dense_matrix
    assert matrix is not None and not matrix.mapped


def test_a_read_only_view_maps_but_never_writes(index_path: Path, tmp_path: Path) -> None:
    with SqliteIndex(index_path) as writer:
        writer.ensure_model(MODEL, DIM)
        fill(writer, tmp_path, 3)
    path = vector_file.path_for(index_path)
    assert not path.exists()  # no search yet: nothing written
    view = ReadOnlySqliteIndex(index_path, IndexSettings())
    try:
        assert len(view.search(NO_WORDS, unit_vector("q"), 50)[1]) == 15
        assert not path.exists()
    finally:
        view.close()


def test_purging_deleted_text_deletes_the_vector_file(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    fill(index, tmp_path, 3)
    dense_hits(index, unit_vector("q"))
    assert vector_file.path_for(index_path).exists()
    index.remove_files([src(tmp_path, "f000.md")])
    SqliteIndex.purge_deleted_text(index_path, checkpoint_wait_s=1.0)
    assert not vector_file.path_for(index_path).exists()
    assert len(dense_hits(index, unit_vector("q"))) == 10


def test_a_vector_file_from_a_snapshot_older_than_a_purge_is_not_kept(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    """A process that began reading before a forget writes its vector file
    after the purge deleted the file: it must not leave the forgotten rows'
    vectors on disk, nor may another process use such a file."""
    fill(index, tmp_path, 3)
    vectors_path = vector_file.path_for(index_path)
    reader = sqlite3.connect(index_path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        meta = read_meta(reader)  # the snapshot: before the delete
        index.remove_files([src(tmp_path, "f000.md")])
        SqliteIndex.purge_deleted_text(index_path, checkpoint_wait_s=0.2)
        matrix, _ = dense_sync.synced_matrix(
            reader,
            meta,
            None,
            vectors_path,
            keep_written=lambda generation: keep_written_vectors(index_path, generation),
        )
        reader.execute("COMMIT")
    finally:
        reader.close()
    assert matrix is not None and len(matrix) == 15  # what that snapshot held ...
    assert not matrix.mapped and not vectors_path.exists()  # ... kept in its memory only
    assert len(dense_hits(index, unit_vector("q"))) == 10
    assert vectors_path.exists()  # written again, from a snapshot after the purge
    with SqliteIndex(index_path) as fresh:
        assert len(dense_hits(fresh, unit_vector("q"))) == 10
        mapped = fresh.dense_matrix
        assert mapped is not None and mapped.mapped and len(mapped) == 10


def test_the_base_and_the_tail_filter_alike() -> None:
    rows = [
        DenseRow(i, vector_to_blob(unit_vector(str(i), 4)), kind, source, date, session)
        for i, (kind, source, date, session) in enumerate(
            [
                ("topic", "/x/topics/a.md", None, None),
                ("journal", "/a.md", "2026-01-01", "s1"),
                ("journal", "/x/2026-01-02.md", "2026-01-02T10:30", "s2"),
                ("session", "/a.md", "2026-01-03", None),
            ],
            start=1,
        )
    ]
    tail_only = DenseMatrix(4, "e", 0)
    tail_only.add(rows)
    base = dense_sync.rebased(tail_only, None)  # the same rows as a base
    extra = DenseRow(9, vector_to_blob(unit_vector("9", 4)), "journal", "/y.md", "2026-02-01", "s2")
    for matrix in (tail_only, base):
        matrix.add([extra])
    query = unit_vector("q", 4)
    for filters in (
        SearchFilters(kind="topic"),
        SearchFilters(source_prefix="/x/"),
        SearchFilters(session="s2"),
        SearchFilters(after="2026-01-02"),
        SearchFilters(before="2026-01-02T11"),
    ):
        assert set(base.top(query, 10, filters)) == set(tail_only.top(query, 10, filters))
    base.remove([3])
    assert set(base.top(query, 10, SearchFilters(session="s2"))) == {9}


def test_int8_codes_stay_close_to_the_vectors() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((200, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    restored = codes.astype(np.float32) * scales[:, None]
    assert np.abs(restored - vectors).max() <= scales.max() / 2 + 1e-7
    assert quantize(np.zeros((1, 4), dtype=np.float32))[0].tolist() == [[0, 0, 0, 0]]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0), flip=st.integers(min_value=0), byte=st.integers(0, 255))
def test_any_damage_reads_as_no_file_or_a_whole_one(
    tmp_path: Path, cut: int, flip: int, byte: int
) -> None:
    matrix = DenseMatrix(4, "e", 7)
    matrix.add(
        [
            DenseRow(i, vector_to_blob(unit_vector(str(i), 4)), "journal", f"/{i}.md", None, None)
            for i in range(1, 6)
        ]
    )
    path = tmp_path / "x.vectors"
    columns, sources, sessions = matrix.live_columns()
    vector_file.write_snapshot(
        path,
        epoch="e",
        generation=7,
        dimension=4,
        columns=columns,
        sources=sources,
        sessions=sessions,
    )
    data = bytearray(path.read_bytes())
    data[flip % len(data)] = byte
    path.write_bytes(bytes(data[: cut % (len(data) + 1)]))
    snapshot = vector_file.open_snapshot(path, epoch="e", dimension=4)
    if snapshot is not None:
        assert snapshot.rows == len(snapshot.columns["codes"]) <= 5


@pytest.mark.parametrize("best_at", ["sampled", "unsampled", "spread"])
def test_the_sampled_selection_picks_what_a_full_partition_picks(
    monkeypatch: pytest.MonkeyPatch, best_at: str
) -> None:
    rng = np.random.default_rng(11)
    rows, dim = 4096, 8
    query = unit_vector("q", dim)
    vectors = rng.standard_normal((rows, dim)).astype(np.float32) * 0.2
    # 60 rows close to the query, placed where the stride sample sees them
    # (every one in it: the threshold is too high, the fallback runs), where
    # it sees none of them, or anywhere.
    places = {
        "sampled": np.arange(0, rows, int8.SAMPLE_STRIDE)[:60],
        "unsampled": np.arange(1, rows, int8.SAMPLE_STRIDE)[:60],
        "spread": rng.choice(rows, 60, replace=False),
    }[best_at]
    vectors[places] += query * 3
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = DenseMatrix(dim, "e", 0)
    matrix.add(
        [
            DenseRow(i + 1, vector_to_blob(v), "journal", "/a.md", None, None)
            for i, v in enumerate(vectors)
        ]
    )
    monkeypatch.setattr(int8, "SAMPLE_MIN_ROWS", 10**9)
    full = matrix.search(query, 50)
    monkeypatch.setattr(int8, "SAMPLE_MIN_ROWS", 64)
    monkeypatch.setattr(int8, "SAMPLE_MARGIN", 1)
    sampled = matrix.search(query, 50)
    assert sampled.hits == full.hits
    assert {rowid - 1 for rowid, _ in full.hits} <= set(places.tolist())


def test_a_killed_writers_temporary_file_goes_with_the_next_write(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(finished.stdout)
    path = vector_file.path_for(index_path)
    left = path.with_name(f".{path.name}.{dead_pid}.0123abcd.tmp")
    ours = path.with_name(f".{path.name}.{os.getpid()}.89abcdef.tmp")
    left.write_bytes(b"half a file")
    ours.write_bytes(b"a live writer's file")
    fill(index, tmp_path, 2)
    dense_hits(index, unit_vector("q"))  # writes the vector file
    assert path.is_file() and not left.exists() and ours.exists()


def test_a_vector_file_naming_sources_it_lacks_is_not_used(tmp_path: Path) -> None:
    matrix = DenseMatrix(4, "e", 3)
    rows = [
        DenseRow(i, vector_to_blob(unit_vector(str(i), 4)), "journal", f"/{i}.md", None, None)
        for i in (1, 2)
    ]
    matrix.add(rows)
    columns, sources, sessions = matrix.live_columns()
    path = tmp_path / "x.vectors"
    common = {"epoch": "e", "generation": 3, "dimension": 4, "sessions": sessions}
    vector_file.write_snapshot(path, columns=columns, sources=sources, **common)  # type: ignore[arg-type]
    assert vector_file.open_snapshot(path, epoch="e", dimension=4) is not None
    vector_file.write_snapshot(path, columns=columns, sources=sources[:1], **common)  # type: ignore[arg-type]
    assert vector_file.open_snapshot(path, epoch="e", dimension=4) is None
