"""Keeping a process's DenseMatrix in step with the index file.

Each search reads ``meta`` once (generation, epoch, dimension, tombstone
floor). When the generation moved, only the rows whose vector was written
since (``vec_gen``) are read and the rows deleted since (``tombstones``)
are marked dead, so a search right after a small write costs a few rows,
not a reload of every BLOB. A full load happens on first use, after a
model change or wipe (new epoch), or when the tombstones this process
would need were pruned.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from memlane.index.legs.dense import DenseMatrix, DenseRow
from memlane.index.sqlite import schema

LOAD_BATCH_ROWS = 4096  # rows per fetchmany while (re)loading vectors

_ROW_COLUMNS = "id, vector, kind, source, date, session"


def synced_matrix(
    conn: sqlite3.Connection, meta: Mapping[str, Any], current: DenseMatrix | None
) -> tuple[DenseMatrix | None, int | None]:
    """The matrix for the snapshot ``meta`` was read in, and the bound dimension.

    Call inside the read transaction that read ``meta``. ``current`` may be
    updated in place and returned; None means no dimension is bound yet (so
    no vector was ever stored).
    """
    generation = int(meta[schema.META_GENERATION])
    epoch = str(meta.get(schema.META_EPOCH))
    dimension = meta.get(schema.META_DIMENSION)
    floor = int(meta.get(schema.META_TOMBSTONE_FLOOR) or 0)
    if not isinstance(dimension, int):
        return None, None
    if current is not None and current.epoch == epoch and current.generation == generation:
        return current, dimension
    if (
        current is None
        or current.epoch != epoch
        or current.dimension != dimension
        or current.generation < floor
        or current.generation > generation
    ):
        return _full_load(conn, dimension, epoch, generation), dimension
    dead = conn.execute("SELECT id FROM tombstones WHERE gen > ?", (current.generation,))
    current.remove(row[0] for row in dead.fetchall())
    _add_rows(
        current,
        conn.execute(f"SELECT {_ROW_COLUMNS} FROM chunks WHERE vec_gen > ?", (current.generation,)),
    )
    current.generation = generation
    return current, dimension


def _full_load(
    conn: sqlite3.Connection, dimension: int, epoch: str, generation: int
) -> DenseMatrix:
    dense = DenseMatrix(dimension, epoch, generation)
    # Sized up front: growing a 150 MB matrix by copies doubled the load time
    # and its peak memory.
    stored = conn.execute("SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL").fetchone()[0]
    dense.reserve(int(stored))
    # "vector IS NOT NULL" (no index on it) scans the table in rowid order,
    # cheaper than an index walk plus a lookup per row.
    _add_rows(dense, conn.execute(f"SELECT {_ROW_COLUMNS} FROM chunks WHERE vector IS NOT NULL"))
    return dense


def _add_rows(dense: DenseMatrix, cursor: sqlite3.Cursor) -> None:
    while batch := cursor.fetchmany(LOAD_BATCH_ROWS):
        dense.add([DenseRow(*row) for row in batch])
