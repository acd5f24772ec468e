"""Reads of a sessions index: the transcripts' source records, the
documents (by key, entry, transcript), those still waiting for a vector,
the counts of ``memlane status``; plain functions over the store's
``SqliteFile`` and ``Redaction``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from memlane.index.session_docs import SourceState, StoredDoc
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.session_redaction import Redaction
from memlane.index.sqlite.session_schema import DOC_COLUMNS, SOURCE_COLUMNS
from memlane.index.sqlite.session_search import doc_of
from memlane.index.sqlite.statements import file_size, read, read_meta


def sources(file: SqliteFile) -> dict[str, SourceState]:
    def op(conn: sqlite3.Connection) -> dict[str, SourceState]:
        rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources").fetchall()
        return {row[0]: SourceState(*row) for row in rows}

    return file.run(op)


def source(file: SqliteFile, path: str) -> SourceState | None:
    def op(conn: sqlite3.Connection) -> SourceState | None:
        row = conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources WHERE path = ?", (path,)
        ).fetchone()
        return SourceState(*row) if row is not None else None

    return file.run(op)


def existing(file: SqliteFile, keys: Iterable[str]) -> dict[str, bool]:
    """doc key -> has a vector, for the keys already stored."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}

    def op(conn: sqlite3.Connection) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            for key, has_vector in conn.execute(
                f"SELECT doc_key, vec_gen IS NOT NULL FROM chunks WHERE doc_key IN ({marks})",
                part,
            ):
                out[key] = bool(has_vector)
        return out

    return file.run(op)


def missing_vectors(
    file: SqliteFile, redaction: Redaction, limit: int | None
) -> list[tuple[str, str]]:
    """(doc key, text) of documents that should have a vector and do not."""

    def op(conn: sqlite3.Connection) -> list[tuple[str, str]]:
        rows = conn.execute(
            "SELECT doc_key, content FROM chunks WHERE embed = 1 AND vec_gen IS NULL "
            "ORDER BY id LIMIT ?",
            (-1 if limit is None else max(limit, 0),),
        ).fetchall()
        return [(row[0], redaction.shown(conn, row[1])) for row in rows]

    return file.run(op)


def count(file: SqliteFile) -> int:
    return file.run(lambda c: int(c.execute("SELECT count(*) FROM chunks").fetchone()[0]))


def get(file: SqliteFile, redaction: Redaction, key: str) -> StoredDoc | None:
    def op(conn: sqlite3.Connection) -> StoredDoc | None:
        row = conn.execute(f"SELECT {DOC_COLUMNS} FROM chunks WHERE doc_key = ?", (key,)).fetchone()
        return doc_of(redaction, conn, row) if row is not None else None

    return file.run(op)


def find_entry(file: SqliteFile, redaction: Redaction, entry_id: str) -> list[StoredDoc]:
    """Documents of a transcript entry id (a message id as pi/Claude wrote it)."""

    def op(conn: sqlite3.Connection) -> list[StoredDoc]:
        rows = conn.execute(
            f"SELECT {DOC_COLUMNS} FROM chunks WHERE entry_id = ? ORDER BY part, id",
            (entry_id,),
        ).fetchall()
        return [doc_of(redaction, conn, row) for row in rows]

    return file.run(op)


def docs_of(file: SqliteFile, redaction: Redaction, transcript: str) -> list[StoredDoc]:
    def op(conn: sqlite3.Connection) -> list[StoredDoc]:
        rows = conn.execute(
            f"SELECT {DOC_COLUMNS} FROM chunks WHERE transcript = ? ORDER BY id",
            (transcript,),
        ).fetchall()
        return [doc_of(redaction, conn, row) for row in rows]

    return file.run(op)


def stats(file: SqliteFile) -> dict[str, Any]:
    def op(conn: sqlite3.Connection) -> dict[str, Any]:
        with read(conn):
            docs = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            embedded = conn.execute(
                "SELECT count(*) FROM chunks WHERE vec_gen IS NOT NULL"
            ).fetchone()[0]
            # The partial index holds exactly these rows: counted from it,
            # not by reading every row without a vector (all of them, in
            # a lexical-only project).
            pending = conn.execute(
                "SELECT count(*) FROM chunks INDEXED BY chunks_pending "
                "WHERE embed = 1 AND vec_gen IS NULL"
            ).fetchone()[0]
            sessions = conn.execute(
                "SELECT count(DISTINCT session) FROM chunks WHERE session IS NOT NULL"
            ).fetchone()[0]
            by_role = dict(
                conn.execute("SELECT source, count(*) FROM chunks GROUP BY source").fetchall()
            )
            sources, garbage, unknown = conn.execute(
                "SELECT count(*), coalesce(sum(garbage), 0), coalesce(sum(unknown), 0) FROM sources"
            ).fetchone()
            meta = read_meta(conn)
        extra: dict[str, Any] = {}
        if file.rebuilt_reason is not None:
            # Peeked, not popped: `memlane status --json` shows it and a
            # later sessions command still gets to tell the user.
            extra["rebuilt"] = file.rebuilt_reason
        return {
            "path": str(file.path),
            "documents": docs,
            "embedded": embedded,
            "pending": pending,
            "sessions": sessions,
            "sources": sources,
            "by_role": by_role,
            "garbage_lines": garbage,
            "unknown_entries": unknown,
            "model": meta.get(schema.META_MODEL),
            "dimensions": meta.get(schema.META_DIMENSION),
            "size_bytes": file_size(file.path),
            **extra,
        }

    return file.run(op)
