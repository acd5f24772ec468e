"""Keeping a process's DenseMatrix in step with the index file.

Each search reads ``meta`` once (generation, epoch, dimension, tombstone
floor). When the generation moved, only the rows whose vector was written
since (``vec_gen``) are read and the rows deleted since (``tombstones``)
are marked dead, so a search right after a small write costs a few rows,
not a reload of every BLOB.

A process without a matrix maps the vector file beside the index
(``vector_file.py``) and catches up from the generation it was taken at
the same way; only when that file is missing, of another epoch, or older
than the pruned tombstones does it read every BLOB, and it then writes
the vector file for the next process. When the rows written since the
base pass ``REBASE_FRACTION`` of it, the live rows become a new vector
file, so no process scans a long tail or carries many dead rows.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.index.legs import vector_file
from memlane.index.legs.dense import VECTOR_DTYPE, DenseMatrix, DenseRow
from memlane.index.sqlite import schema

log = logging.getLogger(__name__)

LOAD_BATCH_ROWS = 4096  # rows per fetchmany while (re)loading vectors
# The tail (rows written since the base, plus the base's dead rows) is
# folded into a new vector file past this share of the base, or past
# REBASE_MIN_ROWS while the base is small.
REBASE_FRACTION = 1 / 8
REBASE_MIN_ROWS = 4096
_IN_BATCH = 500  # row ids per "IN (...)" read (SQLite's variable limit is 999 on old builds)

_ROW_COLUMNS = "id, vector, kind, source, date, session"

#: Asked after a vector file was written from the snapshot at a generation:
#: whether it may stay (the index file's owner deletes it when not).
KeepWritten = Callable[[int], bool]


def synced_matrix(
    conn: sqlite3.Connection,
    meta: Mapping[str, Any],
    current: DenseMatrix | None,
    vectors_path: Path | None = None,
    *,
    write_vectors: bool = True,
    keep_written: KeepWritten | None = None,
) -> tuple[DenseMatrix | None, int | None]:
    """The matrix for the snapshot ``meta`` was read in, and the bound dimension.

    Call inside the read transaction that read ``meta``. ``current`` may be
    updated in place and returned; None means no dimension is bound yet (so
    no vector was ever stored). ``vectors_path`` is the vector file to map
    and, with ``write_vectors``, to keep (None: rows live in this process's
    memory only; a read-only view maps the file but never writes it).
    ``keep_written`` is asked after each file written (``rebased``).
    """
    target = vectors_path if write_vectors else None
    generation = int(meta[schema.META_GENERATION])
    epoch = str(meta.get(schema.META_EPOCH))
    dimension = meta.get(schema.META_DIMENSION)
    floor = int(meta.get(schema.META_TOMBSTONE_FLOOR) or 0)
    purged_at = int(meta.get(schema.META_PURGED_AT) or 0)
    if not isinstance(dimension, int):
        return None, None
    if current is not None and current.epoch == epoch and current.generation == generation:
        return current, dimension
    oldest = max(floor, purged_at)  # a file older than a purge is not used
    if not _can_catch_up(current, epoch, dimension, floor, generation):
        current = _mapped(vectors_path, epoch, dimension, oldest, generation)
        if current is None:
            return (
                _full_load(conn, dimension, epoch, generation, target, keep_written),
                dimension,
            )
    assert current is not None
    _catch_up(conn, current, generation)
    if _rebase_due(current):
        # Another process may have folded the same rows into a newer file:
        # map that one instead of writing the file again.
        newer = _mapped(vectors_path, epoch, dimension, oldest, generation)
        if newer is not None and newer.base_generation > current.base_generation:
            _catch_up(conn, newer, generation)
            current = newer
        if _rebase_due(current):
            current = rebased(current, target, keep_written)
    return current, dimension


def _catch_up(conn: sqlite3.Connection, matrix: DenseMatrix, generation: int) -> None:
    """The rows deleted and the vectors written since the matrix's generation."""
    if matrix.generation == generation:
        return
    dead = conn.execute("SELECT id FROM tombstones WHERE gen > ?", (matrix.generation,))
    matrix.remove(row[0] for row in dead.fetchall())
    _add_rows(
        matrix,
        conn.execute(f"SELECT {_ROW_COLUMNS} FROM chunks WHERE vec_gen > ?", (matrix.generation,)),
    )
    matrix.generation = generation


def _rebase_due(matrix: DenseMatrix) -> bool:
    return matrix.stale_rows > max(REBASE_MIN_ROWS, int(matrix.base_rows * REBASE_FRACTION))


def _can_catch_up(
    current: DenseMatrix | None, epoch: str, dimension: int, floor: int, generation: int
) -> bool:
    return (
        current is not None
        and current.epoch == epoch
        and current.dimension == dimension
        and floor <= current.generation <= generation
    )


def _mapped(
    path: Path | None, epoch: str, dimension: int, floor: int, generation: int
) -> DenseMatrix | None:
    """A matrix over the vector file at *path*, when it can be caught up."""
    if path is None:
        return None
    snapshot = vector_file.open_snapshot(path, epoch=epoch, dimension=dimension)
    if snapshot is None or not floor <= snapshot.generation <= generation:
        return None
    return DenseMatrix(dimension, epoch, snapshot.generation, snapshot)


def rebased(
    matrix: DenseMatrix, path: Path | None, keep_written: KeepWritten | None = None
) -> DenseMatrix:
    """The live rows of *matrix* as a new base: written to the vector file at
    *path* and mapped, or kept in memory when there is no file to write (a
    read-only directory, a full disk: the search goes on, and says so in
    the log) or *keep_written* says the file written must go."""
    columns, sources, sessions = matrix.live_columns()
    if path is not None:
        try:
            vector_file.write_snapshot(
                path,
                epoch=matrix.epoch,
                generation=matrix.generation,
                dimension=matrix.dimension,
                columns=columns,
                sources=sources,
                sessions=sessions,
            )
        except OSError as exc:
            log.warning(
                "could not write the vector file %s (%s): vectors stay in memory", path, exc
            )
        else:
            snapshot = (
                vector_file.open_snapshot(path, epoch=matrix.epoch, dimension=matrix.dimension)
                if keep_written is None or keep_written(matrix.generation)
                else None
            )
            if snapshot is not None and snapshot.generation == matrix.generation:
                return DenseMatrix(matrix.dimension, matrix.epoch, matrix.generation, snapshot)
    in_memory = vector_file.Snapshot(
        epoch=matrix.epoch,
        generation=matrix.generation,
        dimension=matrix.dimension,
        columns=columns,
        sources=list(sources),
        sessions=list(sessions),
    )
    rebuilt = DenseMatrix(matrix.dimension, matrix.epoch, matrix.generation, in_memory)
    rebuilt.mapped = False
    return rebuilt


def _full_load(
    conn: sqlite3.Connection,
    dimension: int,
    epoch: str,
    generation: int,
    vectors_path: Path | None,
    keep_written: KeepWritten | None,
) -> DenseMatrix:
    dense = DenseMatrix(dimension, epoch, generation)
    # Sized up front: growing a large matrix by copies doubles the load
    # time and its peak memory.
    stored = conn.execute("SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL").fetchone()[0]
    dense.reserve(int(stored))
    # "vector IS NOT NULL" (no index on it) scans the table in rowid order,
    # cheaper than an index walk plus a lookup per row.
    _add_rows(dense, conn.execute(f"SELECT {_ROW_COLUMNS} FROM chunks WHERE vector IS NOT NULL"))
    return rebased(dense, vectors_path, keep_written) if len(dense) else dense


def _add_rows(dense: DenseMatrix, cursor: sqlite3.Cursor) -> None:
    while batch := cursor.fetchmany(LOAD_BATCH_ROWS):
        dense.add([DenseRow(*row) for row in batch])


def exact_vectors(
    conn: sqlite3.Connection, rowids: Sequence[int]
) -> dict[int, npt.NDArray[np.float32]]:
    """The float32 vectors of *rowids* (rows without one left out), read in
    the caller's read transaction: what a search rescores its candidates with."""
    out: dict[int, npt.NDArray[np.float32]] = {}
    for start in range(0, len(rowids), _IN_BATCH):
        batch = rowids[start : start + _IN_BATCH]
        marks = ",".join("?" * len(batch))
        for rowid, blob in conn.execute(
            f"SELECT id, vector FROM chunks WHERE id IN ({marks}) AND vector IS NOT NULL",
            tuple(batch),
        ):
            out[int(rowid)] = np.frombuffer(blob, dtype=VECTOR_DTYPE)
    return out
