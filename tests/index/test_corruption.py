"""A damaged index file is moved aside, replaced and deleted, never raised to the caller."""

from __future__ import annotations

import os
import random
import sqlite3
import threading
from pathlib import Path

import pytest
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for

from memlane.index.sqlite import schema
from memlane.index.sqlite.notes import SqliteIndex


def populated(path: Path, tmp_path: Path, files: int = 40) -> None:
    """An index big enough that truncating it loses table pages."""
    with SqliteIndex(path) as idx:
        idx.ensure_model(MODEL, DIM)
        for f in range(files):
            texts = [f"- note {f}-{i} about redis and postgres " * 8 for i in range(10)]
            record, chunks = make_file(src(tmp_path, f"f{f}.md"), texts)
            idx.replace_file(record, chunks, vectors_for(chunks))
    # closing the last connection checkpoints the WAL into the main file
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0


def aside_files(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if ".corrupt-" in p.name)


def assert_fresh_and_usable(idx: SqliteIndex, tmp_path: Path) -> None:
    assert idx.count() == 0
    idx.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "new.md"), ["- fresh start with redis"])
    idx.replace_file(record, chunks, vectors_for(chunks))
    mode, hits = idx.search("redis", unit_vector("- fresh start with redis"), 3)
    assert mode == "hybrid" and [h.chunk.chunk_hash for h in hits] == [chunks[0].chunk.chunk_hash]
    assert hits[0].score > 0.99


def test_garbage_file_is_rebuilt_at_open(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=2)
    index_path.write_bytes(os.urandom(64 * 1024))
    idx = SqliteIndex(index_path)
    try:
        assert idx.rebuilt_reason is not None
        assert "damaged file was deleted" in idx.rebuilt_reason
        # Nothing is salvaged from it, and no copy may outlive a forget.
        assert aside_files(index_path) == []
        assert_fresh_and_usable(idx, tmp_path)
        assert idx.pop_rebuilt_reason() is not None and idx.rebuilt_reason is None
    finally:
        idx.close()


def test_not_sqlite_text_file(index_path: Path, tmp_path: Path) -> None:
    index_path.parent.mkdir(parents=True)
    index_path.write_text("this is not a database\n" * 10)
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is not None
        assert_fresh_and_usable(idx, tmp_path)


def test_truncated_file_caught_at_open_or_first_search(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path)
    size = index_path.stat().st_size
    with open(index_path, "r+b") as fh:
        fh.truncate(size // 2)
    idx = SqliteIndex(index_path)
    try:
        _mode, hits = idx.search("redis", unit_vector("q"), 5)  # must not raise
        assert hits == []
        assert idx.rebuilt_reason is not None
        assert_fresh_and_usable(idx, tmp_path)
    finally:
        idx.close()


def test_truncation_under_an_open_index_is_caught_on_next_operation(
    index_path: Path, tmp_path: Path
) -> None:
    populated(index_path, tmp_path)
    idx = SqliteIndex(index_path)
    try:
        assert idx.count() == 400
        with open(index_path, "r+b") as fh:
            fh.truncate(index_path.stat().st_size // 2)
        record, chunks = make_file(src(tmp_path, "late.md"), ["- written after the damage"])
        assert idx.replace_file(record, chunks, vectors_for(chunks)) == 1  # landed in fresh index
        assert idx.rebuilt_reason is not None
        assert idx.count() == 1
    finally:
        idx.close()


@pytest.mark.parametrize(
    ("ddl", "name"), [("DROP TABLE files", "files"), ("DROP INDEX chunks_filter", "chunks_filter")]
)
def test_missing_table_or_index_is_damage(
    index_path: Path, tmp_path: Path, ddl: str, name: str
) -> None:
    populated(index_path, tmp_path, files=1)
    conn = sqlite3.connect(index_path)
    conn.execute(ddl)
    conn.close()
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is not None and name in idx.rebuilt_reason
        assert idx.count() == 0


def test_newer_schema_is_moved_aside(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    conn = sqlite3.connect(index_path)
    conn.execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is not None and "newer" in idx.rebuilt_reason
        assert idx.stats()["schema_version"] == schema.SCHEMA_VERSION


def test_older_schema_is_emptied_in_place(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    conn = sqlite3.connect(index_path)
    conn.execute("UPDATE meta SET value = 1 WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is not None and "schema version 1" in idx.rebuilt_reason
        assert idx.count() == 0 and idx.files() == {}
        assert idx.stats()["schema_version"] == schema.SCHEMA_VERSION
    assert not list(index_path.parent.glob("*.corrupt*"))
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is None


def test_healthy_open_reports_nothing(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is None
        assert idx.count() == 10
    assert aside_files(index_path) == []


def test_stale_wal_goes_with_the_damaged_file(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    wal = Path(str(index_path) + "-wal")
    stale = os.urandom(8192)
    wal.write_bytes(stale)
    index_path.write_bytes(os.urandom(8192))
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is not None
        assert_fresh_and_usable(idx, tmp_path)
    assert aside_files(index_path) == []  # deleted with the damaged file...
    assert not wal.exists() or wal.read_bytes() != stale  # ...never replayed onto the fresh one


def test_other_process_rebuild_is_noticed(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    a = SqliteIndex(index_path)
    b = SqliteIndex(index_path)
    try:
        assert a.count() == 10 and b.count() == 10
        index_path.write_bytes(os.urandom(8192))  # damage seen by a first...
        a.search("redis", None, 3)
        assert a.rebuilt_reason is not None
        record, chunks = make_file(src(tmp_path, "x.md"), ["- after rebuild"])
        a.replace_file(record, chunks, {})
        # ...b still holds the old file open: it must switch to a's fresh one
        assert b.count() == 1
        assert b.rebuilt_reason is not None
        # b did not move a's fresh file aside (that would have emptied it)
        assert aside_files(index_path) == []
    finally:
        a.close()
        b.close()


def test_concurrent_detection_moves_aside_once(index_path: Path, tmp_path: Path) -> None:
    populated(index_path, tmp_path, files=1)
    index_path.write_bytes(os.urandom(16384))
    errors: list[BaseException] = []
    opened: list[SqliteIndex] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        try:
            barrier.wait()
            idx = SqliteIndex(index_path)
            idx.search("redis", None, 3)
            opened.append(idx)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert len(opened) == 4
        assert aside_files(index_path) == []
        # Only one thread rebuilt: the others found the fresh file.
        assert (
            sum(
                idx.rebuilt_reason is not None and "deleted" in idx.rebuilt_reason for idx in opened
            )
            == 1
        )
        # a thread that opened after the rebuild finished found a healthy file
        assert any(idx.rebuilt_reason is not None for idx in opened)
        # every thread ended up on the one fresh file: a write by one is seen by
        # all, and none has to reopen a replaced file to see it
        for idx in opened:
            idx.pop_rebuilt_reason()
        record, chunks = make_file(src(tmp_path, "after.md"), ["- written after the race"])
        opened[0].replace_file(record, chunks, {})
        assert [idx.count() for idx in opened] == [1, 1, 1, 1]
        assert [idx.rebuilt_reason for idx in opened] == [None, None, None, None]
    finally:
        for idx in opened:
            idx.close()


@pytest.mark.parametrize("offset", [100, 4096, 3 * 4096])
def test_scribbled_pages(index_path: Path, tmp_path: Path, offset: int) -> None:
    populated(index_path, tmp_path)
    with open(index_path, "r+b") as fh:
        fh.seek(offset)
        fh.write(random.Random(offset).randbytes(4096))  # the same damage on every run
    idx = SqliteIndex(index_path)
    try:
        # whichever operation first trips over the damage rebuilds; none raises
        idx.search("redis", unit_vector("q"), 5)
        idx.count()
        idx.files()
        record, chunks = make_file(src(tmp_path, "z.md"), ["- z"])
        idx.replace_file(record, chunks, vectors_for(chunks))
        assert idx.rebuilt_reason is not None and "damaged file was deleted" in idx.rebuilt_reason
        assert aside_files(index_path) == []
        # the old rows are gone with the damaged file; the write after it landed
        assert idx.files() == {record.source: record}
        assert idx.count() == 1
        _mode, hits = idx.search("z", unit_vector("- z"), 5)
        assert [h.chunk.chunk_hash for h in hits] == [chunks[0].chunk.chunk_hash]
    finally:
        idx.close()
