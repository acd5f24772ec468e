"""The notes index's file: schema creation, validation and upgrade, damage
bookkeeping, model binding and clearing (the ``SqliteFile`` hooks for the
notes index, ``notes.SqliteIndex``)."""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlane.core.errors import IndexCorruptError
from memlane.core.faults import step
from memlane.index.legs import lexical
from memlane.index.protocol import IndexBusyError
from memlane.index.sqlite import schema
from memlane.index.sqlite.busy import write_lock_holder
from memlane.index.sqlite.file import SqliteFile, _DamagedIndex

log = logging.getLogger("memlane.index.sqlite.notes")


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class NotesFile(SqliteFile):
    """One notes index file, without the chunks' reads and writes."""

    # The model the caller bound (set by SqliteIndex.__init__): a file
    # created later records it.
    _bound_model: tuple[str, int | None] | None

    def clear(self) -> None:
        """Drop every chunk and file record and forget the bound model.

        Done in place, in one transaction: processes holding the file open
        just see the generation move (a deleted or renamed file would look
        like damage to them and make each one re-index).
        """

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                self._wipe(conn)
                conn.execute(
                    "DELETE FROM meta WHERE key IN (?, ?)",
                    (schema.META_MODEL, schema.META_DIMENSION),
                )

        with self._lock:
            self._bound_model = None
            self._run(op)
            self._dense = None

    # -- opening, validation, rebuild ---------------------------------------

    def _validate_or_create(self) -> None:
        """Cheap open-time check: our tables exist and the schema is ours.

        No integrity_check (it reads every page: too slow at 100k chunks);
        damage deeper in the file surfaces as SQLITE_CORRUPT on the first
        operation that touches it and is handled there.
        """
        conn = self._connection()
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if not names:
            step("index.create")
            self._create_schema(conn)
            lexical.install(conn)
            return
        missing = schema.REQUIRED_OBJECTS - names
        if missing:
            raise _DamagedIndex(f"missing table(s)/index(es) {', '.join(sorted(missing))}")
        meta = self._meta(conn)
        version = meta.get(schema.META_SCHEMA_VERSION)
        if not isinstance(version, int) or schema.META_GENERATION not in meta:
            raise _DamagedIndex("meta table lacks schema version or generation")
        if version > schema.SCHEMA_VERSION:
            raise _DamagedIndex(
                f"index schema version {version} is newer than this memlane "
                f"({schema.SCHEMA_VERSION})"
            )
        if version < schema.SCHEMA_VERSION:
            self._upgrade(conn, version)
        lexical.install(conn)

    def _upgrade(self, conn: sqlite3.Connection, version: int) -> None:
        """An older schema (e.g. another FTS tokenizer): empty it in place.

        The index is derived data, so an upgrade is a wipe and the engine
        re-indexes from markdown; done in place like ``clear`` so other
        processes just see the generation move.
        """
        with self._write(conn):
            row = conn.execute(
                "SELECT value FROM meta WHERE key = ?", (schema.META_SCHEMA_VERSION,)
            ).fetchone()
            if row is not None and row[0] == schema.SCHEMA_VERSION:
                return  # another process upgraded it a moment ago
            self._wipe(conn)
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (schema.SCHEMA_VERSION, schema.META_SCHEMA_VERSION),
            )
        self._dense = None
        self.rebuilt_reason = (
            f"index {self.path.name} had schema version {version} (now "
            f"{schema.SCHEMA_VERSION}: {schema.SCHEMA_CHANGE}); it was emptied"
        )
        log.info("%s", self.rebuilt_reason)

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
            if self._bound_model is not None:
                defaults[schema.META_MODEL] = self._bound_model[0]
                defaults[schema.META_DIMENSION] = self._bound_model[1]
            conn.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", list(defaults.items())
            )
            conn.execute("COMMIT")
        except BaseException:
            self._rollback(conn)
            raise

    def _record_rebuild(self, reason: str, target: Path | None) -> None:
        if target is not None:
            self.rebuilt_reason = (
                f"index {self.path.name} was damaged ({reason}); the damaged file was "
                "deleted and a fresh one created, to be rebuilt from the markdown"
            )
        else:
            self.rebuilt_reason = (
                f"index {self.path.name} was damaged ({reason}) and another process "
                "already recreated it"
            )
        log.info("%s", self.rebuilt_reason)

    def _replaced_on_disk(self, rebuilt_meanwhile: bool) -> None:
        if self.rebuilt_reason is None:
            self.rebuilt_reason = (
                f"index {self.path.name} was replaced on disk by another process "
                "(probably rebuilt after damage)"
            )
            log.info("%s", self.rebuilt_reason)

    def _busy_error(self, waited_s: float) -> IndexBusyError:
        return IndexBusyError(
            f"index {self.path} stayed locked by another process for {waited_s:.2g} s "
            f"(its write lock is held by {write_lock_holder(self.path)})",
            hint="another memlane is indexing; retry shortly",
        )

    def _recreate_failed(self, exc: BaseException) -> IndexCorruptError:
        return IndexCorruptError(
            f"index {self.path} is damaged and could not be recreated: {exc}",
            hint="delete the file; it is rebuilt from markdown by `memlane reindex`",
        )

    def _damaged_after_recreate(self, reason: str) -> IndexCorruptError:
        return IndexCorruptError(
            f"index {self.path} is damaged right after being recreated: {reason}"
        )

    @staticmethod
    def _busy_while_opening(exc: BaseException) -> bool:
        return _is_busy(exc)

    # -- protocol: model binding ---------------------------------------------

    def ensure_model(self, model: str, dimension: int | None) -> bool:
        with self._guard():
            self._bound_model = (model, dimension)
            return self._run(lambda conn: self._ensure_model(conn, model, dimension))

    def _ensure_model(self, conn: sqlite3.Connection, model: str, dimension: int | None) -> bool:
        if self._model_matches(self._meta(conn), model, dimension) == "same":
            return False  # the common case: no write lock taken
        with self._write(conn):
            meta = self._meta(conn)  # re-read: another process may have done it
            verdict = self._model_matches(meta, model, dimension)
            wiped = verdict == "changed"
            if wiped:
                self._wipe(conn)
            elif dimension is None:
                dimension = meta.get(schema.META_DIMENSION)  # keep what vectors set
            conn.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [(schema.META_MODEL, model), (schema.META_DIMENSION, dimension)],
            )
        if wiped:
            self._dense = None
            log.info("index %s: embedding model changed to %s; cleared", self.path.name, model)
        return wiped

    @staticmethod
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

    @staticmethod
    def _wipe(conn: sqlite3.Connection) -> None:
        """Drop every chunk, file record and FTS row (inside a write txn)."""
        for ddl in schema.DATA_TABLES_DROP:
            conn.execute(ddl)
        for ddl in schema.TABLES_DDL:
            conn.execute(ddl)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = ?", (secrets.token_hex(8), schema.META_EPOCH)
        )
