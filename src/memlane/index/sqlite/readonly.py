"""A foreign project's notes index, opened read-only (``file:...?mode=ro``).

Cross-repo recall searches other projects' indexes in this process; this
view may never write one. ``SqliteIndex`` opens read-write and repairs what
it finds (creates the schema, upgrades it, moves a damaged file aside):
here each of those paths is an error instead, and the search itself is the
unchanged ``SqliteIndex`` code, so cross-repo scores mean what project
scores mean.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any

from memlane.core.errors import IndexCorruptError, MemlaneError
from memlane.core.settings import IndexSettings
from memlane.index.legs import lexical
from memlane.index.sqlite import schema
from memlane.index.sqlite.connect import CACHE_SIZE_KIB
from memlane.index.sqlite.file import SqliteFile
from memlane.index.sqlite.notes import SqliteIndex
from memlane.index.sqlite.recovery import file_id
from memlane.index.sqlite.statements import read_meta


class IndexUnreadable(MemlaneError):
    """A project's index exists but cannot be searched read-only."""


class ScratchTokenizingLeg(lexical.LexicalLeg):
    """BM25 leg whose query tokenizer runs on a private in-memory
    connection: SQLite refuses to create the FTS5 scratch table on a
    read-only connection (any schema, even temp). Same tokenizer spec, same
    SQLite, so the tokens are exactly the index's."""

    def __init__(self) -> None:
        super().__init__()
        self._scratch = sqlite3.connect(":memory:", check_same_thread=False)
        for ddl in lexical.QUERY_TOKENIZER_DDL:
            self._scratch.execute(ddl)

    def close(self) -> None:
        self._scratch.close()

    def scratch(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        # Only the tokenizing moves here; document frequencies and the
        # ranking still read the index (``conn``).
        return self._scratch


class ReadOnlyFile(SqliteFile):
    """A ``SqliteFile`` opened read-only: what the read-write file repairs
    (a missing or older schema, damage) is an error here instead."""

    writes_vectors = False

    def _open(self) -> None:
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        wait_s = self.wait_s()  # bounded inside a search's wait budget
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=wait_s,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise IndexUnreadable(f"cannot open {self.path} read-only: {exc}") from None
        self._conn = conn
        self._busy_ms = round(wait_s * 1000)
        self._file_id = file_id(self.path)
        try:
            conn.execute(f"PRAGMA cache_size=-{CACHE_SIZE_KIB}")
            conn.execute("PRAGMA temp_store=MEMORY")
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            missing = schema.REQUIRED_OBJECTS - names
            if missing:
                raise IndexUnreadable(
                    f"{self.path.name} is not a memlane index "
                    f"(missing {', '.join(sorted(missing))})"
                )
            version = read_meta(conn).get(schema.META_SCHEMA_VERSION)
            if version != schema.SCHEMA_VERSION:
                raise IndexUnreadable(
                    f"{self.path.name} has index schema version {version} (this memlane "
                    f"reads {schema.SCHEMA_VERSION}); its owner's next index upgrades it"
                )
            # The BM25 leg's document frequencies: a TEMP fts5vocab over the
            # index, which (unlike an fts5 table) a read-only connection may
            # create.
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memlane_vocab "
                "USING fts5vocab(main, chunks_fts, row)"
            )
        except sqlite3.Error as exc:
            self.close_connection()
            raise IndexUnreadable(f"cannot read {self.path}: {exc}") from None
        except IndexUnreadable:
            self.close_connection()
            raise

    def _rebuild(self, reason: str) -> None:
        raise IndexCorruptError(
            f"index {self.path} is damaged ({reason}); left as it is",
            "its owner rebuilds it with `memlane reindex`",
        )

    def close(self) -> None:
        super().close()
        leg = self.lexical
        if isinstance(leg, ScratchTokenizingLeg):
            leg.close()


class ReadOnlySqliteIndex(SqliteIndex):
    """``SqliteIndex`` opened read-only (``file:...?mode=ro``).

    SqliteIndex opens read-write and repairs what it finds (creates the
    schema, upgrades it, moves a damaged file aside). Here each of those
    paths is an error instead (its file is a ``ReadOnlyFile``): a foreign
    index is somebody else's, and a fan-out leaves it exactly as it found
    it. Search itself (fusion, dense matrix, BM25 ranking) is the unchanged
    SqliteIndex code, so cross-repo scores mean what project scores mean.
    """

    def _open_file(self, path: Path) -> SqliteFile:
        leg = ScratchTokenizingLeg()
        try:
            return ReadOnlyFile(path, leg, self._kind)
        except BaseException:
            leg.close()
            raise

    def meta(self) -> dict[str, Any]:
        """The index's meta table (model, dimension, schema version...)."""
        return dict(self._file.run(read_meta))


def open_read_only(path: Path, settings: IndexSettings) -> ReadOnlySqliteIndex | None:
    """The index at ``path`` opened read-only, or None when there is no file.

    Never creates anything: a missing file stays missing (SQLite's
    ``mode=ro`` refuses to create one even if it vanishes after the check).
    SQLite may create the ``-wal``/``-shm`` coordination files beside an
    existing WAL index, as any reader does; the index itself is not written.
    """
    if not path.is_file():
        return None
    try:
        return ReadOnlySqliteIndex(path, settings)
    except IndexUnreadable:
        if not path.exists():
            return None
        raise
