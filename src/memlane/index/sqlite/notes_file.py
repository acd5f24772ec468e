"""The notes index's file: schema creation, validation and upgrade, damage
bookkeeping (``NotesKind``, the ``FileKind`` of the notes index), model
binding and clearing (``ensure_model``, ``clear``)."""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memlane.core.faults import step
from memlane.index.legs import lexical
from memlane.index.sqlite import schema
from memlane.index.sqlite.file import DamagedIndex, SqliteFile
from memlane.index.sqlite.statements import read_meta, rollback

log = logging.getLogger("memlane.index.sqlite.notes")


class NotesKind:
    """The notes index file's schema, rebuild bookkeeping and messages.

    ``tunables`` gives (busy timeout, tombstone window) at call time: the
    notes module's knobs, so a test may shorten them there.
    """

    label = "index"
    fault_area = "index"
    busy_before_damage = False
    busy_hint = "another memlane is indexing; retry shortly"
    recreate_hint = "delete the file; it is rebuilt from markdown by `memlane reindex`"
    damaged_hint: str | None = None

    def __init__(self, tunables: Callable[[], tuple[float, tuple[int, int]]]) -> None:
        self._tunables = tunables
        # The model the caller bound: a file created later records it.
        self.bound_model: tuple[str, int | None] | None = None

    def busy_timeout_s(self) -> float:
        return self._tunables()[0]

    def tombstone_window(self) -> tuple[int, int]:
        return self._tunables()[1]

    @staticmethod
    def busy_while_opening(exc: BaseException) -> bool:
        text = str(exc).lower()
        return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)

    def validate_or_create(self, file: SqliteFile, conn: sqlite3.Connection) -> None:
        """Cheap open-time check: our tables exist and the schema is ours.

        No integrity_check (it reads every page: too slow at 100k chunks);
        damage deeper in the file surfaces as SQLITE_CORRUPT on the first
        operation that touches it and is handled there.
        """
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if not names:
            step("index.create")
            self._create_schema(conn)
            lexical.install(conn)
            return
        missing = schema.REQUIRED_OBJECTS - names
        if missing:
            raise DamagedIndex(f"missing table(s)/index(es) {', '.join(sorted(missing))}")
        meta = read_meta(conn)
        version = meta.get(schema.META_SCHEMA_VERSION)
        if not isinstance(version, int) or schema.META_GENERATION not in meta:
            raise DamagedIndex("meta table lacks schema version or generation")
        if version > schema.SCHEMA_VERSION:
            raise DamagedIndex(
                f"index schema version {version} is newer than this memlane "
                f"({schema.SCHEMA_VERSION})"
            )
        if version < schema.SCHEMA_VERSION:
            _upgrade(file, conn, version)
        lexical.install(conn)

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        # Two processes creating the same new file serialise on BEGIN
        # IMMEDIATE, and the second finds the schema made and changes nothing.
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another connection created it since we looked: leave it as it is.
            # Writing FTS5's rank setting again would make every connection
            # that has already searched fail its next ranked query once with
            # "SQL logic error" (SQLite 3.40's FTS5 rereads it badly).
            if conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
                conn.execute("COMMIT")
                return
            for ddl in schema.TABLES_DDL:
                conn.execute(ddl)
            defaults: dict[str, object] = {
                schema.META_SCHEMA_VERSION: schema.SCHEMA_VERSION,
                schema.META_GENERATION: 0,
                schema.META_EPOCH: secrets.token_hex(8),
                schema.META_TOMBSTONE_FLOOR: 0,
            }
            if self.bound_model is not None:
                defaults[schema.META_MODEL] = self.bound_model[0]
                defaults[schema.META_DIMENSION] = self.bound_model[1]
            conn.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", list(defaults.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise

    @staticmethod
    def record_rebuild(file: SqliteFile, reason: str, target: Path | None) -> None:
        if target is not None:
            file.rebuilt_reason = (
                f"index {file.path.name} was damaged ({reason}); the damaged file was "
                "deleted and a fresh one created, to be rebuilt from the markdown"
            )
        else:
            file.rebuilt_reason = (
                f"index {file.path.name} was damaged ({reason}) and another process "
                "already recreated it"
            )
        log.info("%s", file.rebuilt_reason)

    @staticmethod
    def replaced_on_disk(file: SqliteFile, rebuilt_meanwhile: bool) -> None:
        if file.rebuilt_reason is None:
            file.rebuilt_reason = (
                f"index {file.path.name} was replaced on disk by another process "
                "(probably rebuilt after damage)"
            )
            log.info("%s", file.rebuilt_reason)


def _upgrade(file: SqliteFile, conn: sqlite3.Connection, version: int) -> None:
    """An older schema (e.g. another FTS tokenizer): empty it in place.

    The index is derived data, so an upgrade is a wipe and the engine
    re-indexes from markdown; done in place like ``clear`` so other
    processes just see the generation move.
    """
    with file.write(conn):
        row = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
        ).fetchone()
        if row is not None and row[0] == schema.SCHEMA_VERSION:
            return  # another process upgraded it a moment ago
        _wipe(conn)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = ?",
            (schema.SCHEMA_VERSION, schema.META_SCHEMA_VERSION),
        )
    file.forget_dense()
    file.rebuilt_reason = (
        f"index {file.path.name} had schema version {version} (now "
        f"{schema.SCHEMA_VERSION}: {schema.SCHEMA_CHANGE}); it was emptied"
    )
    log.info("%s", file.rebuilt_reason)


def clear(file: SqliteFile, kind: NotesKind) -> None:
    """Drop every chunk and file record and forget the bound model.

    Done in place, in one transaction: processes holding the file open
    just see the generation move (a deleted or renamed file would look
    like damage to them and make each one re-index).
    """

    def op(conn: sqlite3.Connection) -> None:
        with file.write(conn):
            _wipe(conn)
            conn.execute(
                "DELETE FROM meta WHERE key IN (?, ?)",
                (schema.META_MODEL, schema.META_DIMENSION),
            )

    with file.lock:
        kind.bound_model = None
        file.run(op)
        file.forget_dense()


def ensure_model(file: SqliteFile, kind: NotesKind, model: str, dimension: int | None) -> bool:
    """Bind the index to ``model``; another model (or dimension) empties it.
    True when it was emptied."""
    with file.guard():
        kind.bound_model = (model, dimension)
        return file.run(lambda conn: _ensure_model(file, conn, model, dimension))


def _ensure_model(
    file: SqliteFile, conn: sqlite3.Connection, model: str, dimension: int | None
) -> bool:
    if _model_matches(read_meta(conn), model, dimension) == "same":
        return False  # the common case: no write lock taken
    with file.write(conn):
        meta = read_meta(conn)  # re-read: another process may have done it
        verdict = _model_matches(meta, model, dimension)
        wiped = verdict == "changed"
        if wiped:
            _wipe(conn)
        elif dimension is None:
            dimension = meta.get(schema.META_DIMENSION)  # keep what vectors set
        conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            [(schema.META_MODEL, model), (schema.META_DIMENSION, dimension)],
        )
    if wiped:
        file.forget_dense()
        log.info("index %s: embedding model changed to %s; cleared", file.path.name, model)
    return wiped


def _model_matches(meta: Mapping[str, Any], model: str, dimension: int | None) -> str:
    """Return "same" (nothing to do), "update" (record it) or "changed" (wipe)."""
    stored_model = meta.get(schema.META_MODEL)
    stored_dim = meta.get(schema.META_DIMENSION)
    dim_conflict = dimension is not None and stored_dim is not None and stored_dim != dimension
    if stored_model is None:
        # A fresh index, or one written before any model was bound: only
        # vectors of another size force a wipe.
        return "changed" if dim_conflict else "update"
    if stored_model != model or dim_conflict:
        return "changed"
    if dimension is not None and stored_dim is None:
        return "update"
    return "same"


def _wipe(conn: sqlite3.Connection) -> None:
    """Drop every chunk, file record and FTS row (inside a write txn)."""
    for ddl in schema.DATA_TABLES_DROP:
        conn.execute(ddl)
    for ddl in schema.TABLES_DDL:
        conn.execute(ddl)
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = ?", (secrets.token_hex(8), schema.META_EPOCH)
    )
