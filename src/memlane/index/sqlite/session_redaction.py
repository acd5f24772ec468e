"""Secret redaction of the texts already stored in a sessions index.

Which redaction the stored texts went through is the meta row
``META_REDACTION``; until it reads the current ``REDACTION_VERSION`` every
text read out of the store is redacted on its way out, and
``redact_stored`` rewrites the rows that still hold a secret. ``Redaction``
holds that state for a ``SessionStore``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable

from memlane.core.faults import step
from memlane.index.legs import vector_file
from memlane.index.session_docs import content_hash
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.session_schema import (
    META_REDACTION,
    REDACT_BATCH,
    REDACTION_VERSION,
    REWRITE_COLUMNS,
)
from memlane.index.sqlite.statements import mark_purged


class Redaction:
    """The redaction the stored texts of one sessions index file must have
    been through (``redact``; None: texts are stored and shown as given),
    and whether they have."""

    def __init__(self, file: SqliteFile, redact: Callable[[str], str] | None) -> None:
        self._file = file
        self._redact = redact
        self._rows_redacted = redact is None

    def rows_redacted(self) -> bool:
        """Whether every stored text went through the current redaction."""
        return self._rows_redacted or self._file.run(self._redacted_in)

    def _redacted_in(self, conn: sqlite3.Connection) -> bool:
        if not self._rows_redacted:
            # Once true it stays true: new rows come redacted, and a cleared
            # or recreated file is rescanned (empty) before it is written.
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_REDACTION,)).fetchone()
            self._rows_redacted = row is not None and row[0] == REDACTION_VERSION
        return self._rows_redacted

    def shown(self, conn: sqlite3.Connection, text: str) -> str:
        """*text* as a reader may see it: redacted while old rows may hold secrets."""
        if self._redact is None or self._redacted_in(conn):
            return text
        return self._redact(text)

    def redact_stored(self) -> int:
        """Rescan every stored text and rewrite the rows that hold a secret.

        Returns how many rows were rewritten. A rewritten row is deleted and
        inserted again (the triggers drop its old FTS entry and tombstone its
        vector) without a vector, so the next embedding pass embeds the
        redacted text. Batches commit one by one: a kill keeps what is done
        and the next pass goes on (rows already redacted do not change).
        With ``secure_delete`` the freed pages are zeroed; the FTS segments
        are merged and the WAL checkpointed, so the old text is gone from
        the file, not only from search.
        """
        redact = self._redact
        if redact is None or self.rows_redacted():
            return 0

        def op(conn: sqlite3.Connection) -> int:
            previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
            conn.execute("PRAGMA secure_delete=ON")
            try:
                rewritten = self._rewrite_redacted(conn, redact)
                if rewritten:
                    with self._file.write(conn):
                        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (META_REDACTION, REDACTION_VERSION),
                )
                if rewritten:
                    mark_purged(conn)
                step("sessions.redact.done")
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                conn.execute(f"PRAGMA secure_delete={int(previous)}")
            return rewritten

        rewritten = self._file.run(op)
        if rewritten:
            # The vector file still holds the old texts' vectors.
            vector_file.discard(self._file.path)
        self._rows_redacted = True
        return rewritten

    def _rewrite_redacted(self, conn: sqlite3.Connection, redact: Callable[[str], str]) -> int:
        rewritten = 0
        last = 0
        while True:
            rows = conn.execute(
                "SELECT id, content FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                (last, REDACT_BATCH),
            ).fetchall()
            if not rows:
                return rewritten
            last = rows[-1][0]
            read = dict(rows)
            changed = [
                (rowid, new) for rowid, text in read.items() if (new := redact(text)) != text
            ]
            if not changed:
                continue
            with self._file.write(conn):
                for rowid, new in changed:
                    old = conn.execute(
                        f"SELECT {REWRITE_COLUMNS} FROM chunks WHERE id = ?", (rowid,)
                    ).fetchone()
                    if old is None or old[9] != read[rowid]:
                        continue  # changed by another process since the read
                    conn.execute("DELETE FROM chunks WHERE id = ?", (rowid,))
                    conn.execute(
                        f"INSERT INTO chunks({REWRITE_COLUMNS}) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (*old[:8], content_hash(new), new, old[10]),
                    )
                    rewritten += 1
            step("sessions.redact.batch")
