"""Writes to the notes index: a file's chunks replaced in one transaction,
files removed, vectors stored (each checked against the bound dimension);
plain functions over the index's ``SqliteFile``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from memlane.index.legs.dense import vector_to_blob
from memlane.index.protocol import (
    DimensionMismatchError,
    FileRecord,
    IndexedChunk,
    chunks_of,
    file_contexts,
)
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import SqliteFile


def _as_vector(chunk_hash: str, vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.size == 0 or not bool(np.all(np.isfinite(array))):
        raise ValueError(f"vector for chunk {chunk_hash} is empty or not finite")
    return array


def _blobs(
    conn: sqlite3.Connection, vectors: Mapping[str, npt.NDArray[np.float32]]
) -> dict[str, bytes]:
    """Check every vector against the bound dimension (inside a write txn).

    The first vectors stored in an index without a recorded dimension
    set it, so vector spaces can never mix within one file.
    """
    if not vectors:
        return {}
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (schema.META_DIMENSION,)).fetchone()
    dimension = row[0] if row is not None else None
    sizes = {array.size for array in vectors.values()}
    expected = dimension if isinstance(dimension, int) else next(iter(sizes))
    if sizes != {expected}:
        wrong = sorted(sizes - {expected})
        raise DimensionMismatchError(
            f"vector dimension {wrong[0]} does not match the index dimension {expected}",
            hint="the embedder changed; call ensure_model with the new model first",
        )
    if not isinstance(dimension, int):
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (schema.META_DIMENSION, expected),
        )
    return {chunk_hash: vector_to_blob(array) for chunk_hash, array in vectors.items()}


def replace_file(
    file: SqliteFile,
    record: FileRecord,
    chunks: Sequence[IndexedChunk],
    vectors: Mapping[str, np.ndarray],
) -> int:
    wanted = chunks_of(record, chunks)
    arrays = {h: _as_vector(h, vectors[h]) for h in wanted if h in vectors}
    return file.run(lambda conn: _replace_file(file, conn, record, wanted, arrays))


def _replace_file(
    file: SqliteFile,
    conn: sqlite3.Connection,
    record: FileRecord,
    wanted: Mapping[str, IndexedChunk],
    arrays: Mapping[str, npt.NDArray[np.float32]],
) -> int:
    with file.write(conn) as generation:
        blobs = _blobs(conn, arrays)
        contexts = file_contexts(wanted.values())
        rows = conn.execute(
            "SELECT chunk_hash, id, vector IS NOT NULL, context FROM chunks WHERE source = ?",
            (record.source,),
        ).fetchall()
        # A chunk whose neighbour changed keeps its hash but not its BM25
        # context: it is replaced, and keeps its vector (a note is
        # embedded as it stands, so the vector does not depend on it).
        existing = {
            chunk_hash: (rowid, has_vector)
            for chunk_hash, rowid, has_vector, context in rows
            if chunk_hash in wanted and context == contexts[chunk_hash]
        }
        moved = [
            rowid
            for chunk_hash, rowid, has_vector, _ in rows
            if chunk_hash in wanted and chunk_hash not in existing and has_vector
        ]
        kept_vectors: dict[str, bytes] = {}
        for start in range(0, len(moved), 500):
            part = moved[start : start + 500]
            marks = ", ".join("?" * len(part))
            kept_vectors.update(
                conn.execute(
                    f"SELECT chunk_hash, vector FROM chunks WHERE id IN ({marks})", part
                ).fetchall()
            )
        stale = [(rowid,) for chunk_hash, rowid, _, _ in rows if chunk_hash not in existing]
        conn.executemany("DELETE FROM chunks WHERE id = ?", stale)
        new_rows = []
        vector_updates = []
        for chunk_hash, item in wanted.items():
            blob = blobs.get(chunk_hash) or kept_vectors.get(chunk_hash)
            if chunk_hash in existing:
                rowid, has_vector = existing[chunk_hash]
                if blob is not None and not has_vector:
                    vector_updates.append((blob, generation, rowid))
                continue
            c = item.chunk
            new_rows.append(
                (
                    chunk_hash,
                    c.source,
                    c.heading,
                    c.heading_level,
                    c.start_line,
                    c.end_line,
                    c.content_hash,
                    item.kind,
                    item.date,
                    item.session,
                    c.content,
                    contexts[chunk_hash],
                    generation if blob is not None else None,
                    blob,
                )
            )
        # OR IGNORE: a concurrent writer may have inserted the same chunk
        # (same hash) a moment ago; idempotent, never a duplicate.
        cursor = conn.executemany(
            "INSERT OR IGNORE INTO chunks(chunk_hash, source, heading, heading_level, "
            "start_line, end_line, content_hash, kind, date, session, content, context, "
            "vec_gen, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            new_rows,
        )
        inserted = max(cursor.rowcount, 0)
        conn.executemany("UPDATE chunks SET vector = ?, vec_gen = ? WHERE id = ?", vector_updates)
        conn.execute(
            "INSERT INTO files(source, mtime_ns, size, digest) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(source) DO UPDATE SET mtime_ns = excluded.mtime_ns, "
            "size = excluded.size, digest = excluded.digest",
            (record.source, record.mtime_ns, record.size, record.digest),
        )
    return inserted


def remove_files(file: SqliteFile, sources: Iterable[str]) -> int:
    targets = [(source,) for source in dict.fromkeys(sources)]
    if not targets:
        return 0

    def op(conn: sqlite3.Connection) -> int:
        with file.write(conn):
            # rowcount counts the rows the statement deleted, not the
            # FTS/tombstone rows its trigger wrote.
            removed = conn.executemany("DELETE FROM chunks WHERE source = ?", targets)
            conn.executemany("DELETE FROM files WHERE source = ?", targets)
        return max(removed.rowcount, 0)

    return file.run(op)


def set_vectors(file: SqliteFile, vectors: Mapping[str, np.ndarray]) -> None:
    arrays = {h: _as_vector(h, v) for h, v in vectors.items()}
    if not arrays:
        return

    def op(conn: sqlite3.Connection) -> None:
        with file.write(conn) as generation:
            blobs = _blobs(conn, arrays)
            conn.executemany(
                "UPDATE chunks SET vector = ?, vec_gen = ? WHERE chunk_hash = ?",
                [(blob, generation, h) for h, blob in blobs.items()],
            )

    file.run(op)
