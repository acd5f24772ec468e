"""Chunk lengths as FTS5's bm25 counts them (index/legs/chunk_lengths.py):
the varint parser, then FTS5's own records on a real index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _builders import make_file, src
from hypothesis import given
from hypothesis import strategies as st

from memlane.index.legs import chunk_lengths
from memlane.index.sqlite.notes import SqliteIndex


def sqlite_varint(value: int) -> bytes:
    """SQLite's varint encoding (sqlite3PutVarint): 7 bits a byte, big-endian,
    the high bit on all but the last byte; past 56 bits, a ninth byte
    carries the low 8 bits whole."""
    if value > 0x00FFFFFFFFFFFFFF:
        head = value >> 8
        out = [value & 0xFF]
        for _ in range(8):
            out.append((head & 0x7F) | 0x80)
            head >>= 7
        return bytes(reversed(out))
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(reversed(groups))


@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=12))
def test_varints_reads_what_sqlite_writes(values: list[int]) -> None:
    assert chunk_lengths.varints(b"".join(sqlite_varint(v) for v in values)) == values


def test_a_cut_record_is_an_error_not_a_wrong_length() -> None:
    with pytest.raises(ValueError, match="past the end"):
        chunk_lengths.varints(sqlite_varint(300)[:1])


def test_lengths_and_their_average_are_fts5s_token_counts(
    index: SqliteIndex, index_path: Path, tmp_path: Path
) -> None:
    # The last chunk's content is past 127 tokens: a two-byte varint.
    long = "- " + " ".join(f"word{i}" for i in range(200))
    texts = ["- alpha beta", "- gamma delta epsilon zeta", "- eta", long]
    record, chunks = make_file(src(tmp_path, "a.md"), texts)
    index.replace_file(record, chunks, {})
    conn = sqlite3.connect(index_path)
    try:
        # FTS5's own instance table counts every token of every column.
        conn.execute("CREATE VIRTUAL TABLE temp.tokens USING fts5vocab(main, chunks_fts, instance)")
        counted = dict(conn.execute("SELECT doc, count(*) FROM temp.tokens GROUP BY doc"))
        rows = [int(row) for (row,) in conn.execute("SELECT id FROM chunks")]
        assert chunk_lengths.lengths(conn, rows) == counted
        assert max(counted.values()) > 200
        assert chunk_lengths.average_length(conn) == pytest.approx(sum(counted.values()) / 4)
        assert chunk_lengths.lengths(conn, []) == {}
    finally:
        conn.close()


def test_an_empty_store_has_no_average(index: SqliteIndex, index_path: Path) -> None:
    conn = sqlite3.connect(index_path)
    try:
        assert chunk_lengths.average_length(conn) == 0.0
    finally:
        conn.close()
