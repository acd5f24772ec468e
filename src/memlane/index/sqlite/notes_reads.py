"""Reads of the notes index: file records, chunks and their vectors, the
export batches of ``memlane migrate``, the counts of ``memlane status``;
plain functions over the index's ``SqliteFile``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from memlane.core.types import embedding_text_of
from memlane.index.protocol import FileRecord, IndexedChunk
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.notes_search import CHUNK_COLUMNS, row_to_indexed
from memlane.index.sqlite.statements import file_size, read, read_meta


def files(file: SqliteFile) -> dict[str, FileRecord]:
    def op(conn: sqlite3.Connection) -> dict[str, FileRecord]:
        rows = conn.execute("SELECT source, mtime_ns, size, digest FROM files").fetchall()
        return {row[0]: FileRecord(*row) for row in rows}

    return file.run(op)


def chunk_hashes(file: SqliteFile, source: str) -> set[str]:
    def op(conn: sqlite3.Connection) -> set[str]:
        rows = conn.execute("SELECT chunk_hash FROM chunks WHERE source = ?", (source,))
        return {row[0] for row in rows}

    return file.run(op)


def chunk_contexts(file: SqliteFile, source: str) -> dict[str, str]:
    def op(conn: sqlite3.Connection) -> dict[str, str]:
        rows = conn.execute("SELECT chunk_hash, context FROM chunks WHERE source = ?", (source,))
        return {row[0]: row[1] or "" for row in rows}

    return file.run(op)


def missing_vectors(file: SqliteFile, limit: int | None) -> list[tuple[str, str]]:
    def op(conn: sqlite3.Connection) -> list[tuple[str, str]]:
        with read(conn):
            rows = conn.execute(
                "SELECT chunk_hash, content FROM chunks WHERE vec_gen IS NULL ORDER BY id LIMIT ?",
                (-1 if limit is None else max(limit, 0),),
            ).fetchall()
            # The same input the indexer embeds: the note as it stands.
            return [(h, embedding_text_of(content)) for h, content in rows]

    return file.run(op)


def count(file: SqliteFile) -> int:
    return file.run(lambda conn: int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0]))


def get_indexed(file: SqliteFile, chunk_hash: str) -> IndexedChunk | None:
    def op(conn: sqlite3.Connection) -> IndexedChunk | None:
        row = conn.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE chunk_hash = ?", (chunk_hash,)
        ).fetchone()
        return row_to_indexed(row) if row is not None else None

    return file.run(op)


def vector_of(file: SqliteFile, chunk_hash: str) -> np.ndarray | None:
    def op(conn: sqlite3.Connection) -> np.ndarray | None:
        row = conn.execute(
            "SELECT vector FROM chunks WHERE chunk_hash = ?", (chunk_hash,)
        ).fetchone()
        if row is None or row[0] is None:
            return None
        return np.frombuffer(row[0], dtype=np.float32).copy()

    return file.run(op)


def vectors_of(file: SqliteFile, chunk_hashes: Sequence[str]) -> dict[str, np.ndarray]:
    if not chunk_hashes:
        return {}

    def op(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
        marks = ", ".join("?" * len(chunk_hashes))
        rows = conn.execute(
            f"SELECT chunk_hash, vector FROM chunks WHERE chunk_hash IN ({marks}) "
            "AND vector IS NOT NULL",
            list(chunk_hashes),
        )
        return {h: np.frombuffer(v, dtype=np.float32).copy() for h, v in rows}

    return file.run(op)


def export(file: SqliteFile, batch: int) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
    last = 0
    while True:

        def op(
            conn: sqlite3.Connection, after: int = last
        ) -> list[tuple[int, IndexedChunk, np.ndarray | None]]:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS}, vector FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                (after, max(batch, 1)),
            ).fetchall()
            return [
                (
                    row[0],
                    row_to_indexed(row),
                    None if row[-1] is None else np.frombuffer(row[-1], dtype=np.float32),
                )
                for row in rows
            ]

        rows = file.run(op)
        if not rows:
            return
        last = rows[-1][0]
        yield [(item, vector) for _, item, vector in rows]


def stats(file: SqliteFile) -> dict[str, Any]:
    def op(conn: sqlite3.Connection) -> dict[str, Any]:
        with read(conn):
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            vectors = conn.execute(
                "SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL"
            ).fetchone()[0]
            n_files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
            meta = read_meta(conn)
        return {
            "path": str(file.path),
            "chunks": chunks,
            "vectors": vectors,
            "files": n_files,
            "size_bytes": file_size(file.path),
            "model": meta.get(schema.META_MODEL),
            "dimension": meta.get(schema.META_DIMENSION),
            "generation": meta.get(schema.META_GENERATION),
            "schema_version": meta.get(schema.META_SCHEMA_VERSION),
        }

    return file.run(op)
