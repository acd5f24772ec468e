"""The sessions index's file: schema creation and upgrade, damage
bookkeeping (``SessionKind``, the ``FileKind`` of the sessions store), meta
rows, model binding, clearing (plain functions over its ``SqliteFile``)."""

from __future__ import annotations

import contextlib
import logging
import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlane.index.legs import lexical
from memlane.index.sqlite import file as file_module
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.recovery import is_busy
from memlane.index.sqlite.session_schema import (
    DROP_DDL,
    MIGRATIONS,
    SESSIONS_SCHEMA_VERSION,
    TABLES_DDL,
)
from memlane.index.sqlite.statements import read_meta, rollback

log = logging.getLogger("memlane.index.sqlite.sessions")

REBUILD_HINT = "delete the file; `memlane sessions backfill` rebuilds it from the transcripts"


class SessionKind:
    """The sessions index file's schema, rebuild bookkeeping and messages.

    Damage bookkeeping is per process (the store is one per process, see
    engine.sessions.open_store): how many times the file was recreated
    (``rebuilds``: the ingestor compares it around a pass to spot a rebuild
    in the middle of one), and whether a full pass has read every
    transcript again since (``reread_since_rebuild``).
    """

    label = "session index"
    fault_area = "sessions_index"
    # A lock error whose message reads like damage is still a lock here.
    busy_before_damage = True
    busy_hint = "another memlane is ingesting transcripts; retry shortly"
    recreate_hint = REBUILD_HINT
    damaged_hint: str | None = REBUILD_HINT

    def __init__(self) -> None:
        self.rebuilds = 0
        self.reread_since_rebuild = True

    @staticmethod
    def busy_timeout_s() -> float:
        return file_module.BUSY_TIMEOUT_S

    @staticmethod
    def tombstone_window() -> tuple[int, int]:
        return file_module.TOMBSTONE_KEEP_GENERATIONS, file_module.TOMBSTONE_PRUNE_EVERY

    @staticmethod
    def busy_while_opening(exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.DatabaseError) and is_busy(exc)

    def validate_or_create(self, file: SqliteFile, conn: sqlite3.Connection) -> None:
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
            rollback(conn)
            raise

    @staticmethod
    def _version(conn: sqlite3.Connection) -> object:
        found = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
        ).fetchone()
        return None if found is None else found[0]

    def record_rebuild(self, file: SqliteFile, reason: str, target: Path | None) -> None:
        if target is not None:
            detail = f"{reason}; the damaged file was deleted"
        else:
            detail = f"{reason}; another process had already recreated it"
        self._mark_rebuilt(file, detail)

    def _mark_rebuilt(self, file: SqliteFile, detail: str) -> None:
        file.forget_dense()
        file.rebuilt_reason = detail
        self.rebuilds += 1
        self.reread_since_rebuild = False
        # info, as the main index logs it: the CLI has no log handler (a
        # warning would print a second, unprefixed line); the user hears it
        # from damage_notice, hosts that configure logging get it here too.
        log.info("session index %s was damaged and recreated: %s", file.path.name, detail)

    def replaced_on_disk(self, file: SqliteFile, rebuilt_meanwhile: bool) -> None:
        if not rebuilt_meanwhile:
            self._mark_rebuilt(file, "another process replaced the file (rebuilt after damage)")


def meta(file: SqliteFile) -> dict[str, Any]:
    return file.run(read_meta)


def set_meta(file: SqliteFile, values: Mapping[str, object]) -> None:
    """Write bookkeeping rows (sweeper status) without bumping the generation."""

    def op(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise

    file.run(op)


def ensure_model(file: SqliteFile, model: str, dimension: int | None) -> bool:
    """Bind the vectors to ``model``; another model drops every vector
    (documents stay and are embedded again). True when vectors were dropped."""

    def op(conn: sqlite3.Connection) -> bool:
        meta = read_meta(conn)
        stored_model = meta.get(schema.META_MODEL)
        stored_dim = meta.get(schema.META_DIMENSION)
        dim_conflict = (
            dimension is not None and isinstance(stored_dim, int) and stored_dim != dimension
        )
        if stored_model == model and not dim_conflict and (dimension is None or stored_dim):
            return False
        with file.write(conn):
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
            file.forget_dense()
        return changed

    return file.run(op)


def clear(file: SqliteFile) -> None:
    """Drop every document, vector and source record (``sessions reindex``)."""

    def op(conn: sqlite3.Connection) -> None:
        with file.write(conn):
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
        file.forget_dense()
        file.lexical.reset()
        lexical.install(conn)

    file.run(op)


def checkpoint(file: SqliteFile) -> None:
    """Fold the WAL into the file and truncate it (after a long backfill
    the WAL holds megabytes of pages already in the file). Best effort:
    skipped while another process holds the file busy."""

    def op(conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    file.run(op)
