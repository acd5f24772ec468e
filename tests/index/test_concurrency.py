"""Several real processes writing and searching one collection at once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _builders import make_file, unit_vector
from _worker import VARIANTS, file_names, variant_texts

from helpers import wait_for
from memlane.index.legs import vector_file
from memlane.index.sqlite.notes import SqliteIndex

WORKERS = 4
SECONDS = 3.0
WORKER = Path(__file__).with_name("_worker.py")


def expected_by_digest(root: Path) -> dict[str, set[str]]:
    """digest of every variant of every file -> its chunk hashes."""
    table = {}
    for name in file_names(WORKERS):
        source = str(root / "memory" / name)
        for variant in range(VARIANTS):
            record, chunks = make_file(source, variant_texts(name, variant))
            table[record.digest] = {c.chunk.chunk_hash for c in chunks}
    return table


@pytest.mark.subprocess
def test_processes_replace_and_search_concurrently(tmp_path: Path) -> None:
    index_path = tmp_path / "index" / "ms_shared_12345678.sqlite"  # created by the race
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(index_path), str(tmp_path), str(w), str(SECONDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        counts = json.loads(out)
        assert counts["replace"] > 0 and counts["search"] > 0, counts

    expected = expected_by_digest(tmp_path)
    with SqliteIndex(index_path) as idx:
        assert idx.rebuilt_reason is None
        files = idx.files()
        assert files  # shared files were never removed
        total = 0
        for source, record in files.items():
            # every file holds exactly the chunks of the version recorded last
            assert idx.chunk_hashes(source) == expected[record.digest], source
            total += len(expected[record.digest])
        assert idx.count() == total  # no orphans, no duplicates

    conn = sqlite3.connect(index_path)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        fts_docs = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        assert fts_docs == total
        dup = conn.execute(
            "SELECT count(*) FROM (SELECT chunk_hash FROM chunks GROUP BY chunk_hash "
            "HAVING count(*) > 1)"
        ).fetchone()[0]
        assert dup == 0
        sizes = {n for (n,) in conn.execute("SELECT DISTINCT length(vector) FROM chunks")}
        assert sizes <= {None, 16 * 4}
    finally:
        conn.close()

    # The vector file the processes kept replacing under each other, mapped and
    # caught up by a new process, ranks exactly as every vector read afresh.
    assert vector_file.path_for(index_path).is_file()
    query = unit_vector("redis variant")

    def ranking() -> list[tuple[str, float]]:
        with SqliteIndex(index_path) as idx:
            _, hits = idx.search("redis variant", query, 200, lexical=False)
            return [(hit.chunk.chunk_hash, hit.score) for hit in hits]

    mapped = ranking()
    vector_file.discard(index_path)
    assert mapped and mapped == ranking()


@pytest.mark.subprocess
def test_a_process_that_finds_the_index_created_meanwhile_leaves_it_as_it_is(
    tmp_path: Path,
) -> None:
    """Two processes open a new index at once: the second, held after it saw an
    empty file, must not write the schema again. Writing FTS5's rank setting
    again made the first one's next ranked search fail ("SQL logic error")."""
    index_path = tmp_path / "ms_new_12345678.sqlite"
    trace, resume = tmp_path / "trace", tmp_path / "resume"
    opener = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from memlane.index.sqlite.notes import SqliteIndex; "
            "print(SqliteIndex(sys.argv[1]).count())",
            str(index_path),
        ],
        env={
            **os.environ,
            "MEMLANE_FAULT_TRACE": str(trace),
            "MEMLANE_FAULT_PAUSE": "index.create",
            "MEMLANE_FAULT_RESUME": str(resume),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: trace.exists() and "index.create" in trace.read_text().split(),
            timeout=120,
            what="the second opener to see an empty index",
        )
        with SqliteIndex(index_path) as idx:
            record, chunks = make_file(str(tmp_path / "a.md"), ["- redis cache ttl is 300 s"])
            idx.replace_file(record, chunks, {})
            _, first = idx.search("redis ttl", None, 5, None)
            resume.touch()
            out, err = opener.communicate(timeout=120)
            assert opener.returncode == 0, err
            assert out.strip() == "1"  # it opened the index the first process made
            _, again = idx.search("redis ttl", None, 5, None)
            assert [h.chunk.chunk_hash for h in again] == [h.chunk.chunk_hash for h in first]
            assert len(first) == 1
    finally:
        resume.touch()
        if opener.poll() is None:
            opener.kill()
            opener.communicate()
