"""Chunk lengths as FTS5's bm25 counts them: tokens in all of a chunk's
indexed columns, and the store's average of it.

FTS5 keeps both itself: each row's token count per column in
``chunks_fts_docsize`` and the store's row count and token totals in the
"averages" record of ``chunks_fts_data`` (row 1), each a run of SQLite
varints. ``file_context.py`` reads them to weigh a scope's chunks by the
scope's own average length.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

#: The row of ``chunks_fts_data`` holding FTS5's averages record.
AVERAGES_ROWID = 1


def varints(blob: bytes) -> list[int]:
    """The SQLite varints ``blob`` holds, in order: big-endian groups of 7
    bits, the high bit set on every byte but the last; a ninth byte gives
    all its 8 bits."""
    values: list[int] = []
    at = 0
    while at < len(blob):
        value = 0
        for i in range(9):
            if at >= len(blob):
                raise ValueError("a varint runs past the end of FTS5's record")
            byte = blob[at]
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def average_length(conn: sqlite3.Connection) -> float:
    """The store's average chunk length in tokens (0.0 when it is empty)."""
    row = conn.execute(
        "SELECT block FROM chunks_fts_data WHERE id = ?", (AVERAGES_ROWID,)
    ).fetchone()
    if row is None or not row[0]:
        return 0.0
    rows, *totals = varints(bytes(row[0]))
    return sum(totals) / rows if rows else 0.0


def lengths(conn: sqlite3.Connection, rows: Collection[int]) -> dict[int, int]:
    """Row id -> its length in tokens, for the ``rows`` the index holds."""
    ids = sorted(rows)
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    found = conn.execute(f"SELECT id, sz FROM chunks_fts_docsize WHERE id IN ({marks})", ids)
    return {int(rowid): _total(bytes(size)) for rowid, size in found}


def _total(record: bytes) -> int:
    """The sum of a docsize record's varints. A column of fewer than 128
    tokens is one byte, its own value: nearly every chunk's record is
    summed without parsing."""
    if not record or max(record) < 0x80:
        return sum(record)
    return sum(varints(record))
