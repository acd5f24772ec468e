"""Writes to a sessions index: a batch of documents, vectors and source
offsets committed in one transaction, sources and documents removed;
plain functions over the store's ``SqliteFile``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from memlane.core.clock import SYSTEM_CLOCK, utc_z
from memlane.index.legs.dense import vector_to_blob
from memlane.index.protocol import DimensionMismatchError
from memlane.index.session_docs import DOC_KIND, BatchWrite, content_hash
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import SqliteFile


def commit(file: SqliteFile, batch: BatchWrite) -> int:
    """Apply one batch atomically; returns the documents newly inserted.

    Existing (transcript, entry, part) rows are kept as they are (OR
    IGNORE), except that a vector in the batch fills a row stored
    without one. Transcripts in ``replace`` lose their old rows first.
    """
    arrays = {key: np.asarray(v, dtype=np.float32).reshape(-1) for key, v in batch.vectors.items()}

    def op(conn: sqlite3.Connection) -> int:
        with file.write(conn) as generation:
            blobs = _blobs(conn, arrays)
            for transcript in sorted(batch.replace):
                conn.execute("DELETE FROM chunks WHERE transcript = ?", (transcript,))
            rows = []
            for doc in batch.docs:
                blob = blobs.get(doc.key)
                rows.append(
                    (
                        doc.key,
                        doc.transcript,
                        doc.entry_id,
                        doc.part,
                        DOC_KIND,
                        doc.role,
                        doc.timestamp,
                        doc.session_id,
                        content_hash(doc.text),
                        doc.text,
                        1 if doc.embed else 0,
                        generation if blob is not None else None,
                        blob,
                    )
                )
            cursor = conn.executemany(
                "INSERT OR IGNORE INTO chunks(doc_key, transcript, entry_id, part, kind, "
                "source, date, session, content_hash, content, embed, vec_gen, vector) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            # rowcount counts the statement's own inserts, not its triggers'.
            inserted = max(cursor.rowcount, 0)
            if blobs:
                conn.executemany(
                    "UPDATE chunks SET vector = ?, vec_gen = ? "
                    "WHERE doc_key = ? AND vec_gen IS NULL",
                    [(blob, generation, key) for key, blob in blobs.items()],
                )
            now = utc_z(SYSTEM_CLOCK.now())
            conn.executemany(
                "INSERT INTO sources(path, format, session_id, offset, size, mtime_ns, inode, "
                "head_len, head_hash, garbage, unknown, updated_at, tail_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET format = excluded.format, "
                "session_id = excluded.session_id, offset = excluded.offset, "
                "size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode, "
                "head_len = excluded.head_len, head_hash = excluded.head_hash, "
                "garbage = excluded.garbage, unknown = excluded.unknown, "
                "updated_at = excluded.updated_at, tail_hash = excluded.tail_hash",
                [
                    (
                        s.path,
                        s.format,
                        s.session_id,
                        s.offset,
                        s.size,
                        s.mtime_ns,
                        s.inode,
                        s.head_len,
                        s.head_hash,
                        s.garbage,
                        s.unknown,
                        now,
                        s.tail_hash,
                    )
                    for s in batch.states
                ],
            )
        return inserted

    return file.run(op)


def remove_sources(file: SqliteFile, paths: Iterable[str]) -> int:
    targets = [(p,) for p in dict.fromkeys(paths)]
    if not targets:
        return 0

    def op(conn: sqlite3.Connection) -> int:
        with file.write(conn):
            removed = conn.executemany("DELETE FROM chunks WHERE transcript = ?", targets)
            conn.executemany("DELETE FROM sources WHERE path = ?", targets)
        return max(removed.rowcount, 0)

    return file.run(op)


def remove_docs(file: SqliteFile, keys: Iterable[str]) -> int:
    """Delete these documents, vectors and all; returns how many were stored."""
    targets = [(key,) for key in dict.fromkeys(keys)]
    if not targets:
        return 0

    def op(conn: sqlite3.Connection) -> int:
        with file.write(conn):
            removed = conn.executemany("DELETE FROM chunks WHERE doc_key = ?", targets)
        return max(removed.rowcount, 0)

    return file.run(op)


def set_vectors(file: SqliteFile, vectors: Mapping[str, npt.ArrayLike]) -> None:
    arrays = {k: np.asarray(v, dtype=np.float32).reshape(-1) for k, v in vectors.items()}
    if arrays:
        commit(file, BatchWrite(vectors=arrays))


def _blobs(
    conn: sqlite3.Connection, arrays: Mapping[str, npt.NDArray[np.float32]]
) -> dict[str, bytes]:
    if not arrays:
        return {}
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (schema.META_DIMENSION,)).fetchone()
    dimension = row[0] if row is not None else None
    sizes = {a.size for a in arrays.values()}
    expected = dimension if isinstance(dimension, int) else next(iter(sizes))
    if sizes != {expected}:
        raise DimensionMismatchError(
            f"vector dimension {sorted(sizes - {expected})[0]} does not match the "
            f"session index dimension {expected}",
            hint="the embedder changed; run `memlane sessions reindex`",
        )
    for key, array in arrays.items():
        if not bool(np.all(np.isfinite(array))):
            raise ValueError(f"vector for session document {key} is not finite")
    if not isinstance(dimension, int):
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (schema.META_DIMENSION, expected),
        )
    return {key: vector_to_blob(array) for key, array in arrays.items()}
