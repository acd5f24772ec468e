"""The statements both index files share around an operation's own SQL:
transaction ends and read snapshots, tombstone pruning, the meta table and
what a search keys its caches on, the purge mark the vector file obeys, the
file's size on disk."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memlane.index.legs import vector_file
from memlane.index.sqlite import schema

log = logging.getLogger(__name__)


def prune_tombstones(conn: sqlite3.Connection, floor: int) -> None:
    """Drop the tombstones at or below generation *floor* (inside a write txn)."""
    if floor <= 0:
        return
    conn.execute("DELETE FROM tombstones WHERE gen <= ?", (floor,))
    conn.execute(
        "UPDATE meta SET value = max(value, ?) WHERE key = ?",
        (floor, schema.META_TOMBSTONE_FLOOR),
    )


def rollback(conn: sqlite3.Connection) -> None:
    """End the open transaction, if any, without its changes."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def read(conn: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot (WAL: never blocks, never blocked by a writer)."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        rollback(conn)  # read-only: ending it either way is the same


def read_meta(conn: sqlite3.Connection) -> dict[str, Any]:
    """The meta table (schema version, generation, epoch, model, dimension...)."""
    return {key: value for key, value in conn.execute("SELECT key, value FROM meta")}


def mark_purged(conn: sqlite3.Connection) -> None:
    """Record that deleted text is being purged at the file's current
    generation: no vector file of an older snapshot is used or kept
    (``dense_sync``), since it may hold the deleted rows' vectors."""
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) SELECT ?, value FROM meta WHERE key = ?",
        (schema.META_PURGED_AT, schema.META_GENERATION),
    )


def keep_written_vectors(path: Path, generation: int) -> bool:
    """Whether the vector file this process just wrote for the index file at
    *path*, from the snapshot at *generation*, may stay: not when deleted
    text was purged since (``mark_purged``), or when that cannot be told; it
    is then deleted, as it may hold the deleted rows' vectors. Read afresh,
    outside the search's read transaction: a purge marks the index file
    before it deletes the vector file, so either that delete came after this
    file's rename, or this read sees the mark."""
    try:
        # mode=rw: an index file deleted meanwhile is not created again, empty.
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=5.0)
        try:
            row = conn.execute(
                "SELECT value FROM meta WHERE key = ?", (schema.META_PURGED_AT,)
            ).fetchone()
        finally:
            conn.close()
        if row is None or int(row[0] or 0) <= generation:
            return True
    except (sqlite3.Error, ValueError, TypeError):
        pass
    log.info("deleted text was purged while the vectors of %s were written: dropped", path)
    vector_file.discard(path)
    return False


def cache_key_of(meta: Mapping[str, Any]) -> tuple[Any, Any]:
    """What a search's caches are keyed on: (epoch, generation) of the file."""
    return meta.get(schema.META_EPOCH), meta.get(schema.META_GENERATION)


def file_size(path: Path) -> int:
    """Bytes of the file at *path*, its WAL and its vector file (``stats``)."""
    size = 0
    for suffix in ("", "-wal", vector_file.SUFFIX):
        with contextlib.suppress(OSError):
            size += path.with_name(path.name + suffix).stat().st_size
    return size
