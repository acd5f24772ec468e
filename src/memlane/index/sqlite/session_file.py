"""The sessions index's file: schema creation and upgrade, damage
bookkeeping, meta rows, model binding, clearing (the ``SqliteFile`` hooks
for the sessions store)."""

from __future__ import annotations

import contextlib
import logging
import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlane.core.errors import IndexCorruptError
from memlane.index.legs import lexical
from memlane.index.protocol import IndexBusyError
from memlane.index.sqlite import schema
from memlane.index.sqlite.busy import write_lock_holder
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.session_schema import (
    DROP_DDL,
    MIGRATIONS,
    SESSIONS_SCHEMA_VERSION,
    TABLES_DDL,
)

log = logging.getLogger("memlane.index.sqlite.sessions")

REBUILD_HINT = "delete the file; `memlane sessions backfill` rebuilds it from the transcripts"


class SessionFile(SqliteFile):
    """One sessions index file, without the documents' reads and writes."""

    _label = "session index"
    FAULT_AREA = "sessions_index"
    # A lock error whose message reads like damage is still a lock here.
    _busy_before_damage = True

    # Damage bookkeeping, per process (set by SessionStore.__init__).
    rebuilds: int
    reread_since_rebuild: bool

    # -- schema, damage (SqliteFile hooks) ------------------------------------------

    def _validate_or_create(self) -> None:
        conn = self._connection()
        self._ensure_schema(conn)
        lexical.install(conn)

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
        if row is not None and self._version(conn) == SESSIONS_SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have
            # created or upgraded the file since the check above.
            version = self._version(conn) if row is not None else None
            if version is not None and version in MIGRATIONS:
                for step in range(version, SESSIONS_SCHEMA_VERSION):
                    for ddl in MIGRATIONS[step]:
                        conn.execute(ddl)
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?",
                    (SESSIONS_SCHEMA_VERSION, schema.META_SCHEMA_VERSION),
                )
            elif version is not None and version != SESSIONS_SCHEMA_VERSION:
                # A layout with no migration: derived data, dropped and
                # re-read from the transcripts.
                for ddl in DROP_DDL:
                    conn.execute(ddl)
                conn.execute("DELETE FROM meta")
            for ddl in TABLES_DDL:
                conn.execute(ddl)
            defaults: dict[str, object] = {
                schema.META_SCHEMA_VERSION: SESSIONS_SCHEMA_VERSION,
                schema.META_GENERATION: 0,
                schema.META_EPOCH: secrets.token_hex(8),
                schema.META_TOMBSTONE_FLOOR: 0,
            }
            conn.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", list(defaults.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _version(conn: sqlite3.Connection) -> object:
        found = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
        ).fetchone()
        return None if found is None else found[0]

    def _record_rebuild(self, reason: str, target: Path | None) -> None:
        if target is not None:
            detail = f"{reason}; the damaged file was deleted"
        else:
            detail = f"{reason}; another process had already recreated it"
        self._mark_rebuilt(detail)

    def _mark_rebuilt(self, detail: str) -> None:
        self._dense = None
        self.rebuilt_reason = detail
        self.rebuilds += 1
        self.reread_since_rebuild = False
        # info, as the main index logs it: the CLI has no log handler (a
        # warning would print a second, unprefixed line); the user hears it
        # from damage_notice, hosts that configure logging get it here too.
        log.info("session index %s was damaged and recreated: %s", self.path.name, detail)

    def _replaced_on_disk(self, rebuilt_meanwhile: bool) -> None:
        if not rebuilt_meanwhile:
            self._mark_rebuilt("another process replaced the file (rebuilt after damage)")

    def _busy_error(self, waited_s: float) -> IndexBusyError:
        return IndexBusyError(
            f"session index {self.path} stayed locked by another process for {waited_s:.2g} s "
            f"(its write lock is held by {write_lock_holder(self.path)})",
            hint="another memlane is ingesting transcripts; retry shortly",
        )

    def _recreate_failed(self, exc: BaseException) -> IndexCorruptError:
        return IndexCorruptError(
            f"session index {self.path} is damaged and could not be recreated: {exc}",
            hint=REBUILD_HINT,
        )

    def _damaged_after_recreate(self, reason: str) -> IndexCorruptError:
        return IndexCorruptError(
            f"session index {self.path} is damaged right after being recreated: {reason}",
            hint=REBUILD_HINT,
        )

    # -- meta (model binding, sweeper status) -----------------------------------

    def meta(self) -> dict[str, Any]:
        return self._run(self._meta)

    def set_meta(self, values: Mapping[str, object]) -> None:
        """Write bookkeeping rows (sweeper status) without bumping the generation."""

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items())
                )
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

        self._run(op)

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        """Bind the vectors to ``model``; another model drops every vector
        (documents stay and are embedded again). True when vectors were dropped."""

        def op(conn: sqlite3.Connection) -> bool:
            meta = self._meta(conn)
            stored_model = meta.get(schema.META_MODEL)
            stored_dim = meta.get(schema.META_DIMENSION)
            dim_conflict = (
                dimension is not None and isinstance(stored_dim, int) and stored_dim != dimension
            )
            if stored_model == model and not dim_conflict and (dimension is None or stored_dim):
                return False
            with self._write(conn):
                changed = (stored_model is not None and stored_model != model) or dim_conflict
                if changed:
                    conn.execute("UPDATE chunks SET vector = NULL, vec_gen = NULL")
                    # A new epoch makes every process reload its matrix.
                    conn.execute(
                        "UPDATE meta SET value = ? WHERE key = ?",
                        (secrets.token_hex(8), schema.META_EPOCH),
                    )
                    conn.execute("DELETE FROM tombstones")
                conn.executemany(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    [
                        (schema.META_MODEL, model),
                        (schema.META_DIMENSION, dimension if dimension else stored_dim),
                    ],
                )
            if changed:
                self._dense = None
            return changed

        return self._run(op)

    def clear(self) -> None:
        """Drop every document, vector and source record (``sessions reindex``)."""

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                for ddl in DROP_DDL:
                    conn.execute(ddl)
                for ddl in TABLES_DDL:
                    conn.execute(ddl)
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?",
                    (secrets.token_hex(8), schema.META_EPOCH),
                )
                conn.execute(
                    "DELETE FROM meta WHERE key IN (?, ?)",
                    (schema.META_MODEL, schema.META_DIMENSION),
                )
            self._dense = None
            self._lexical.reset()
            lexical.install(conn)

        self._run(op)

    def checkpoint(self) -> None:
        """Fold the WAL into the file and truncate it (after a long backfill
        the WAL holds megabytes of pages already in the file). Best effort:
        skipped while another process holds the file busy."""

        def op(conn: sqlite3.Connection) -> None:
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

        self._run(op)
