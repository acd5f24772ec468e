"""Browsing the sessions index: per-day counts, sessions by recency or by day,
a transcript's messages a page at a time (the timeline, the primer, the web
viewer's Sessions and Day pages).

Every query here is a grouped or ranged read over an index of its own
(session_schema.py: ``chunks_day``, ``chunks_session_span``,
``chunks_session_source``, ``chunks_transcript``), with LIMIT/OFFSET where it
lists: a page view never reads every row of the file, nor the messages'
texts beyond the ones it shows. Plain functions over the store's
``SqliteFile`` and ``Redaction``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from memlane.index.session_docs import SessionInfo, StoredDoc
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.session_redaction import Redaction
from memlane.index.sqlite.session_schema import DOC_COLUMNS
from memlane.index.sqlite.session_search import doc_of
from memlane.index.sqlite.statements import read

#: A day (``YYYY-MM-DD``) of a document's UTC timestamp, exactly as the
#: ``chunks_day`` index spells it (SQLite uses an expression index only for
#: the same expression).
_DAY = "substr(date, 1, 10)"


def messages_per_day(file: SqliteFile) -> dict[str, int]:
    """How many documents each UTC day holds (``YYYY-MM-DD`` of their timestamp)."""

    def op(conn: sqlite3.Connection) -> dict[str, int]:
        with read(conn):
            rows = conn.execute(
                f"SELECT {_DAY}, count(*) FROM chunks WHERE {_DAY} IS NOT NULL GROUP BY {_DAY}"
            ).fetchall()
        return {str(day): int(n) for day, n in rows if day}

    return file.run(op)


def recent_sessions(
    file: SqliteFile, redaction: Redaction, n: int, exclude: str | None, offset: int
) -> list[SessionInfo]:
    """The ``n`` sessions with the latest messages, newest first (after
    skipping ``offset`` of them)."""

    def op(conn: sqlite3.Connection) -> list[SessionInfo]:
        with read(conn):
            rows = conn.execute(
                "SELECT session, min(transcript), min(date), max(date), count(*) FROM chunks "
                "WHERE session IS NOT NULL AND (? IS NULL OR session != ?) "
                "GROUP BY session ORDER BY max(date) DESC LIMIT ? OFFSET ?",
                (exclude, exclude, max(n, 0), max(offset, 0)),
            ).fetchall()
            return _infos(redaction, conn, rows)

    return file.run(op)


def sessions_on_day(
    file: SqliteFile, redaction: Redaction, day: str, n: int, offset: int
) -> list[SessionInfo]:
    """The sessions with messages on UTC *day*, latest first; ``first_at``,
    ``last_at`` and ``messages`` are that day's."""

    def op(conn: sqlite3.Connection) -> list[SessionInfo]:
        with read(conn):
            rows = conn.execute(
                "SELECT session, min(transcript), min(date), max(date), count(*) FROM chunks "
                f"WHERE {_DAY} = ? AND session IS NOT NULL "
                "GROUP BY session ORDER BY max(date) DESC LIMIT ? OFFSET ?",
                (day, max(n, 0), max(offset, 0)),
            ).fetchall()
            return _infos(redaction, conn, rows)

    return file.run(op)


def transcript_count(file: SqliteFile, transcript: str) -> int:
    """How many documents of *transcript* are stored."""
    return file.run(
        lambda conn: int(
            conn.execute(
                "SELECT count(*) FROM chunks WHERE transcript = ?", (transcript,)
            ).fetchone()[0]
        )
    )


def transcript_format(file: SqliteFile, transcript: str) -> str | None:
    """The format the sessions layer read *transcript* as (the agent it came from)."""
    return file.run(lambda conn: _format_of(conn, transcript))


def transcript_page(
    file: SqliteFile, redaction: Redaction, transcript: str, limit: int, offset: int
) -> list[StoredDoc]:
    """*limit* documents of *transcript* in stored order, from *offset*."""

    def op(conn: sqlite3.Connection) -> list[StoredDoc]:
        rows = conn.execute(
            f"SELECT {DOC_COLUMNS} FROM chunks WHERE transcript = ? ORDER BY id LIMIT ? OFFSET ?",
            (transcript, max(limit, 0), max(offset, 0)),
        ).fetchall()
        return [doc_of(redaction, conn, row) for row in rows]

    return file.run(op)


def _infos(
    redaction: Redaction, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]
) -> list[SessionInfo]:
    """SessionInfo of grouped (session, transcript, first, last, count) rows,
    with each session's first user message and latest summary."""
    out = []
    for session, transcript, first_at, last_at, messages in rows:
        first = conn.execute(
            "SELECT content FROM chunks WHERE session = ? AND source = 'user' "
            "ORDER BY date, id LIMIT 1",
            (session,),
        ).fetchone()
        summary = conn.execute(
            "SELECT content FROM chunks WHERE session = ? AND source = 'summary' "
            "ORDER BY date DESC, id DESC LIMIT 1",
            (session,),
        ).fetchone()
        out.append(
            SessionInfo(
                session_id=session,
                transcript=transcript,
                first_at=first_at,
                last_at=last_at,
                messages=int(messages),
                first_user=redaction.shown(conn, first[0]) if first else "",
                last_summary=redaction.shown(conn, summary[0]) if summary else None,
                format=_format_of(conn, transcript),
            )
        )
    return out


def _format_of(conn: sqlite3.Connection, transcript: str) -> str | None:
    row = conn.execute("SELECT format FROM sources WHERE path = ?", (transcript,)).fetchone()
    return str(row[0]) if row and row[0] else None
