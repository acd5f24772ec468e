"""replace_file / remove_files / vectors / model binding on one SqliteIndex."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for

from memlane.core.types import embedding_text_of
from memlane.index.protocol import DimensionMismatchError, FileRecord, IndexBusyError
from memlane.index.sqlite.notes import SqliteIndex, connection_hook

TEXTS = [
    "- the user and the agent moved the hot cache to Redis with 5 minute TTLs",
    "- the agent fixed the flaky webhook test by pinning the clock",
    "<!-- session:s1 turn:t1 transcript:/x.jsonl -->\n- postgres pool raised to 40",
]


def fts_rows(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        # integrity-check raises if the external-content FTS drifted
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        return int(conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0])
    finally:
        conn.close()


def test_replace_file_inserts_and_is_idempotent(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "2026-01-01.md"), TEXTS)
    assert index.replace_file(record, chunks, vectors_for(chunks)) == 3
    assert index.replace_file(record, chunks, vectors_for(chunks)) == 0
    assert index.count() == 3
    assert index.files() == {record.source: record}
    assert index.chunk_hashes(record.source) == {c.chunk.chunk_hash for c in chunks}
    assert fts_rows(index.path) == 3


def test_replace_file_drops_stale_chunks(index: SqliteIndex, tmp_path: Path) -> None:
    source = src(tmp_path, "a.md")
    record, chunks = make_file(source, TEXTS)
    index.replace_file(record, chunks, {})
    record2, chunks2 = make_file(source, [TEXTS[0], "- a brand new bullet about invoices"])
    assert index.replace_file(record2, chunks2, {}) == 1
    assert index.chunk_hashes(source) == {c.chunk.chunk_hash for c in chunks2}
    assert index.files()[source] == record2
    assert fts_rows(index.path) == 2
    mode, hits = index.search("flaky webhook", None, 5)
    assert (mode, hits) == ("lexical", [])


def test_replace_file_with_no_chunks_keeps_the_file_record(
    index: SqliteIndex, tmp_path: Path
) -> None:
    source = src(tmp_path, "a.md")
    record, chunks = make_file(source, TEXTS)
    index.replace_file(record, chunks, {})
    empty = FileRecord(source, 9, 0, "e3b0")
    index.replace_file(empty, [], {})
    assert index.count() == 0
    assert index.files() == {source: empty}


def test_remove_files(index: SqliteIndex, tmp_path: Path) -> None:
    a, ca = make_file(src(tmp_path, "a.md"), TEXTS)
    b, cb = make_file(src(tmp_path, "b.md"), TEXTS[:1])
    index.replace_file(a, ca, vectors_for(ca))
    index.replace_file(b, cb, vectors_for(cb))
    assert index.remove_files([a.source, a.source, "/nope.md"]) == 3
    assert index.count() == 1
    assert set(index.files()) == {b.source}
    assert index.remove_files([]) == 0
    assert fts_rows(index.path) == 1


def test_chunk_source_must_match_record(index: SqliteIndex, tmp_path: Path) -> None:
    record, _ = make_file(src(tmp_path, "a.md"), TEXTS)
    _, other = make_file(src(tmp_path, "b.md"), TEXTS)
    with pytest.raises(ValueError, match="source"):
        index.replace_file(record, other, {})


def test_missing_and_set_vectors(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    first = chunks[0].chunk.chunk_hash
    index.replace_file(record, chunks, {first: unit_vector("x")})
    missing = index.missing_vectors()
    assert [h for h, _ in missing] == [c.chunk.chunk_hash for c in chunks[1:]]
    # embedding text is the cleaned content (anchor comment removed), the
    # note as it stands: nothing of the chunk before it
    assert missing[1][1] == embedding_text_of(TEXTS[2])
    assert "session:" not in missing[1][1]
    assert len(index.missing_vectors(limit=1)) == 1
    index.set_vectors({h: unit_vector(h) for h, _ in missing} | {"unknown": unit_vector("u")})
    assert index.missing_vectors() == []
    assert index.stats()["vectors"] == 3


def test_vector_added_by_a_later_replace(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    index.replace_file(record, chunks, {})
    assert index.replace_file(record, chunks, vectors_for(chunks)) == 0
    assert index.missing_vectors() == []


def test_wrong_dimension_is_refused_before_writing(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    bad = {c.chunk.chunk_hash: unit_vector(c.chunk.content, DIM + 1) for c in chunks}
    with pytest.raises(DimensionMismatchError, match="dimension"):
        index.replace_file(record, chunks, bad)
    assert index.count() == 0
    index.replace_file(record, chunks, {})
    with pytest.raises(DimensionMismatchError):
        index.set_vectors(bad)
    with pytest.raises(DimensionMismatchError):
        index.search("redis", unit_vector("q", DIM + 1), 3)


def test_non_finite_vector_refused(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS[:1])
    vec = np.full(DIM, np.nan, dtype=np.float32)
    with pytest.raises(ValueError, match="finite"):
        index.replace_file(record, chunks, {chunks[0].chunk.chunk_hash: vec})


def test_dimension_inferred_when_model_bound_without_one(index_path: Path, tmp_path: Path) -> None:
    with SqliteIndex(index_path) as idx:
        assert idx.ensure_model(MODEL, None) is False
        record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
        idx.replace_file(record, chunks, vectors_for(chunks))
        assert idx.stats()["dimension"] == DIM
        assert idx.ensure_model(MODEL, None) is False  # keeps the inferred dimension
        assert idx.ensure_model(MODEL, DIM) is False
        assert idx.count() == 3


def test_model_change_wipes_everything(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    index.replace_file(record, chunks, vectors_for(chunks))
    assert index.search("redis", unit_vector("q"), 3)[0] == "hybrid"
    assert index.ensure_model(MODEL, DIM) is False
    assert index.count() == 3
    assert index.ensure_model("other-model", 8) is True
    assert index.count() == 0
    assert index.files() == {}
    assert fts_rows(index.path) == 0
    stats = index.stats()
    assert (stats["model"], stats["dimension"]) == ("other-model", 8)
    assert index.search("redis", unit_vector("q", 8), 3) == ("lexical", [])
    # same name, other dimension is a different vector space too
    index.replace_file(*make_file(src(tmp_path, "a.md"), TEXTS, model="other-model")[:1], [], {})
    assert index.ensure_model("other-model", 4) is True
    assert index.files() == {}


def test_model_binding_survives_reopen(index_path: Path) -> None:
    with SqliteIndex(index_path) as idx:
        idx.ensure_model(MODEL, DIM)
    with SqliteIndex(index_path) as idx:
        assert idx.ensure_model(MODEL, DIM) is False
        assert idx.ensure_model("new", DIM) is True


def test_get_and_get_indexed(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(
        src(tmp_path, "a.md"), TEXTS, kind="topic", date="2026-01-02", session="s1"
    )
    index.replace_file(record, chunks, {})
    wanted = chunks[1]
    assert index.get(wanted.chunk.chunk_hash) == wanted.chunk
    assert index.get_indexed(wanted.chunk.chunk_hash) == wanted
    assert index.get("0000000000000000") is None


def test_stats_and_uri(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    index.replace_file(record, chunks, vectors_for(chunks[:1]))
    stats = index.stats()
    assert stats["chunks"] == 3 and stats["vectors"] == 1 and stats["files"] == 1
    assert stats["size_bytes"] > 0
    assert index.uri == f"sqlite://{index.path}"


def test_every_write_bumps_the_generation(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    gen = index.stats()["generation"]
    index.replace_file(record, chunks, {})
    index.set_vectors(vectors_for(chunks))
    index.remove_files([record.source])
    assert index.stats()["generation"] == gen + 3


def test_wal_mode_and_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "x.sqlite"
    with SqliteIndex(path):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_destroy_clears_in_place_and_open_handles_follow(index_path: Path, tmp_path: Path) -> None:
    other = SqliteIndex(index_path)
    other.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
    other.replace_file(record, chunks, vectors_for(chunks))
    assert other.search("redis", unit_vector("q"), 3)[0] == "hybrid"
    SqliteIndex.destroy(index_path)
    assert other.count() == 0 and other.files() == {}
    assert other.search("redis", unit_vector("q"), 3) == ("lexical", [])
    assert other.rebuilt_reason is None  # a reindex is not damage
    assert other.stats()["model"] is None
    assert other.ensure_model("new-model", 8) is False  # nothing left to wipe
    other.close()
    SqliteIndex.destroy(tmp_path / "never" / "there.sqlite")  # no-op
    assert not (tmp_path / "never").exists()


def test_destroy_of_a_damaged_file(index_path: Path) -> None:
    index_path.parent.mkdir(parents=True)
    index_path.write_bytes(b"garbage" * 1000)
    SqliteIndex.destroy(index_path)
    with SqliteIndex(index_path) as idx:
        assert idx.count() == 0 and idx.rebuilt_reason is None


def test_write_lock_held_too_long_is_an_index_busy_error(index_path: Path, tmp_path: Path) -> None:
    idx = SqliteIndex(index_path, busy_timeout_s=0.2)
    blocker = sqlite3.connect(index_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
        with pytest.raises(IndexBusyError, match=r"stayed locked by another process for 0\.2 s"):
            idx.replace_file(record, chunks, {})
        assert idx.count() == 0  # nothing was written
        # readers are never blocked by a writer (WAL)
        assert idx.search("redis", None, 3) == ("lexical", [])
        blocker.execute("ROLLBACK")
        assert idx.replace_file(record, chunks, {}) == 3
        assert idx.rebuilt_reason is None
    finally:
        blocker.close()
        idx.close()


def test_connection_hook_sees_every_connection_while_active(
    index_path: Path, tmp_path: Path
) -> None:
    seen: list[tuple[str, int]] = []

    def insecure(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA secure_delete=OFF")
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        seen.append((journal, conn.execute("PRAGMA secure_delete").fetchone()[0]))

    with connection_hook(insecure):
        with SqliteIndex(index_path) as idx:
            record, chunks = make_file(src(tmp_path, "a.md"), TEXTS)
            idx.replace_file(record, chunks, {})
        assert seen == [("wal", 0)]  # after memlane's own PRAGMAs, with its own setting
        index_path.write_bytes(b"garbage" * 1000)
        with SqliteIndex(index_path) as idx:  # the rebuild's fresh connection gets it too
            assert idx.rebuilt_reason is not None and idx.count() == 0
        assert len(seen) >= 2 and set(seen) == {("wal", 0)}
    hooked = len(seen)
    with SqliteIndex(index_path) as idx:  # the block is over: no hook
        assert idx.count() == 0
    assert len(seen) == hooked


def test_a_failing_connection_hook_fails_the_open_without_damage(index_path: Path) -> None:
    with SqliteIndex(index_path) as idx:
        idx.ensure_model(MODEL, DIM)

    def refuse(conn: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    with connection_hook(refuse), pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        SqliteIndex(index_path)
    assert not list(index_path.parent.glob("*.corrupt-*"))  # a refused open is no damage
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is None and idx.stats()["model"] == MODEL
