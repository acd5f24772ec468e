"""The Milvus index's local ledger: a small SQLite cache, never the truth.

Milvus holds the chunks; this file, under memlane's index directory, holds
what a sync needs to be cheap and what Milvus cannot hold:

- ``files``: each indexed source's (mtime, size, digest), so an unchanged
  file is skipped with a stat;
- ``pending``: chunks stored without a vector (the embedder was down). A
  Milvus row must have a vector, so they wait here, with their embedding
  input, until ``set_vectors`` moves them into the collection;
- ``meta``: the uri, collection and model it describes, the collection's
  epoch (to notice a collection dropped or recreated by another tool), the
  cached centroid of the collection's vectors;
- ``rows`` and ``terms``: a mirror of the collection's rows (chunk hash,
  source, memlane's metadata, words) and each word's document frequency,
  what a search's lexical statistics and a file's write need without asking
  Milvus (``mirror.py``; trusted only once checked against the collection);
- ``replica``: on Milvus Lite, each mirrored row's vector and display
  fields, what a search's dense leg reads here (``replica.py``).

Losing it costs a rescan, never data: a fresh ledger lists the sources the
collection holds (``placeholder`` records that force a re-read), and only
chunks missing from Milvus get embedded. A damaged file is replaced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memlane.core.types import Chunk, embedding_text_of
from memlane.core.waits import LockWaitedOut, holding, spend, sqlite_wait_s
from memlane.index.protocol import FileRecord, IndexBusyError, IndexedChunk
from memlane.index.sqlite.busy import write_lock_holder

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
#: A file record that matches no file on disk: the source is re-read and
#: its chunks compared with what Milvus holds.
PLACEHOLDER_MTIME = -1

META_URI = "uri"
META_COLLECTION = "collection"
META_MODEL = "model"
META_EPOCH = "epoch"
META_RECONCILED = "reconciled"  # the collection's sources were listed into files
META_CENTROID = "centroid"

_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS files (source TEXT PRIMARY KEY, mtime_ns INTEGER, "
    "size INTEGER, digest TEXT)",
    "CREATE TABLE IF NOT EXISTS pending (chunk_hash TEXT PRIMARY KEY, source TEXT, "
    "heading TEXT, heading_level INTEGER, start_line INTEGER, end_line INTEGER, "
    "content_hash TEXT, content TEXT, kind TEXT, date TEXT, session TEXT, seq INTEGER)",
    "CREATE INDEX IF NOT EXISTS pending_source ON pending(source)",
    "CREATE TABLE IF NOT EXISTS rows (chunk_hash TEXT PRIMARY KEY, source TEXT, "
    "kind TEXT, date TEXT, session TEXT, terms TEXT)",
    "CREATE INDEX IF NOT EXISTS rows_source ON rows(source)",
    "CREATE TABLE IF NOT EXISTS terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS replica (chunk_hash TEXT PRIMARY KEY, vector BLOB NOT NULL, "
    "content TEXT, heading TEXT, heading_level INTEGER, start_line INTEGER, end_line INTEGER)",
)
_PENDING_COLUMNS = (
    "chunk_hash, source, heading, heading_level, start_line, end_line, "
    "content_hash, content, kind, date, session"
)


def _indexed(row: Sequence[Any]) -> IndexedChunk:
    chunk = Chunk(
        content=row[7],
        source=row[1],
        heading=row[2],
        heading_level=row[3],
        start_line=row[4],
        end_line=row[5],
        content_hash=row[6],
        chunk_hash=row[0],
    )
    return IndexedChunk(chunk=chunk, kind=row[8], date=row[9], session=row[10])


class Ledger:
    """One ledger file; every method is one short transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._busy_ms = round(BUSY_TIMEOUT_S * 1000)
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            # A cache: a damaged one is replaced, costing one rescan.
            log.info("ledger %s is unreadable (%s); starting a new one", self.path, exc)
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    self.path.with_name(self.path.name + suffix).unlink()
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Pending chunks hold memory text: a forgotten one is overwritten
            # on disk, not just unlinked from the b-tree.
            conn.execute("PRAGMA secure_delete=ON")
            for ddl in _DDL:
                conn.execute(ddl)
            conn.execute("SELECT count(*) FROM files").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[sqlite3.Connection]:
        """The connection under this ledger's lock, with SQLite's busy wait
        bounded by a read's wait budget (core/waits.py); a lock held past it
        is ``IndexBusyError``."""
        try:
            with holding(self._lock):
                wanted = round(sqlite_wait_s(BUSY_TIMEOUT_S) * 1000)
                if wanted != self._busy_ms:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(wanted)}")
                    self._busy_ms = wanted
                started = time.monotonic()
                try:
                    yield self._conn
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                        raise
                    spend(time.monotonic() - started)
                    raise self._busy_error() from None
        except LockWaitedOut:
            raise self._busy_error() from None

    def _busy_error(self) -> IndexBusyError:
        return IndexBusyError(
            f"the Milvus index's ledger {self.path} is locked by {write_lock_holder(self.path)}",
            hint="another memlane is indexing this store; retry shortly",
        )

    @contextlib.contextmanager
    def _txn(self) -> Iterator[sqlite3.Connection]:
        with self._guarded() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._guarded() as conn:
            return conn.execute(sql, params).fetchall()

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction (``mirror.py`` keeps its tables through it)."""
        return self._txn()

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._read(sql, params)

    # -- meta ----------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, **values: str | None) -> None:
        with self._txn() as conn:
            for key, value in values.items():
                if value is None:
                    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
                else:
                    conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value)
                    )

    def centroid(self) -> tuple[int, list[float]] | None:
        raw = self.meta(META_CENTROID)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            return int(data["bucket"]), [float(x) for x in data["vector"]]
        except (ValueError, KeyError, TypeError):
            return None

    def set_centroid(self, bucket: int, vector: Sequence[float]) -> None:
        self.set_meta(**{META_CENTROID: json.dumps({"bucket": bucket, "vector": list(vector)})})

    def clear(self, *, keep: Iterable[str] = (META_URI, META_COLLECTION)) -> None:
        """Forget every file, pending chunk and meta value but ``keep``."""
        kept = list(keep)
        with self._txn() as conn:
            for table in ("files", "pending", "rows", "terms", "replica"):
                conn.execute(f"DELETE FROM {table}")
            marks = ", ".join("?" * len(kept))
            conn.execute(f"DELETE FROM meta WHERE key NOT IN ({marks})", kept)

    # -- files -----------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self._read("SELECT source, mtime_ns, size, digest FROM files")
        return {row[0]: FileRecord(*row) for row in rows}

    def record_file(self, record: FileRecord) -> None:
        with self._txn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO files(source, mtime_ns, size, digest) VALUES (?, ?, ?, ?)",
                (record.source, record.mtime_ns, record.size, record.digest),
            )

    def add_placeholders(self, sources: Iterable[str]) -> None:
        """Record ``sources`` as seen but not read (forces a re-read), unless
        a real record exists; marks the ledger reconciled."""
        with self._txn() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO files(source, mtime_ns, size, digest) VALUES (?, ?, ?, '')",
                [(source, PLACEHOLDER_MTIME, PLACEHOLDER_MTIME) for source in sources],
            )
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (META_RECONCILED,)
            )

    def remove_sources(self, sources: Sequence[str]) -> int:
        """Drop the file records and pending chunks of ``sources``; the
        pending chunks removed."""
        with self._txn() as conn:
            removed = 0
            for source in sources:
                conn.execute("DELETE FROM files WHERE source = ?", (source,))
                removed += conn.execute("DELETE FROM pending WHERE source = ?", (source,)).rowcount
            return removed

    def remove_prefix(self, prefix: str) -> None:
        """Drop every record and pending chunk whose source starts with ``prefix``."""
        with self._txn() as conn:
            for table in ("files", "pending"):
                conn.execute(
                    f"DELETE FROM {table} WHERE substr(source, 1, ?) = ?", (len(prefix), prefix)
                )

    # -- pending chunks ------------------------------------------------------------

    def pending_hashes(self, source: str) -> set[str]:
        rows = self._read("SELECT chunk_hash FROM pending WHERE source = ?", (source,))
        return {row[0] for row in rows}

    def add_pending(self, chunks: Sequence[IndexedChunk]) -> None:
        with self._txn() as conn:
            (seq,) = conn.execute("SELECT coalesce(max(seq), 0) FROM pending").fetchone()
            conn.executemany(
                f"INSERT OR IGNORE INTO pending({_PENDING_COLUMNS}, seq) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c.chunk.chunk_hash,
                        c.chunk.source,
                        c.chunk.heading,
                        c.chunk.heading_level,
                        c.chunk.start_line,
                        c.chunk.end_line,
                        c.chunk.content_hash,
                        c.chunk.content,
                        c.kind,
                        c.date,
                        c.session,
                        seq + n,
                    )
                    for n, c in enumerate(chunks, 1)
                ],
            )

    def remove_pending(self, hashes: Iterable[str]) -> None:
        with self._txn() as conn:
            conn.executemany("DELETE FROM pending WHERE chunk_hash = ?", [(h,) for h in hashes])

    def pending(self, hashes: Iterable[str] | None = None) -> list[IndexedChunk]:
        if hashes is None:
            rows = self._read(f"SELECT {_PENDING_COLUMNS} FROM pending ORDER BY seq")
            return [_indexed(row) for row in rows]
        wanted = list(dict.fromkeys(hashes))
        out: list[IndexedChunk] = []
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            rows = self._read(
                f"SELECT {_PENDING_COLUMNS} FROM pending WHERE chunk_hash IN ({marks}) ORDER BY seq",
                part,
            )
            out.extend(_indexed(row) for row in rows)
        return out

    def missing_vectors(self, limit: int | None) -> list[tuple[str, str]]:
        rows = self._read(
            "SELECT chunk_hash, content FROM pending ORDER BY seq LIMIT ?",
            (-1 if limit is None else max(limit, 0),),
        )
        return [(h, embedding_text_of(content)) for h, content in rows]

    def pending_count(self) -> int:
        return int(self._read("SELECT count(*) FROM pending")[0][0])

    def file_count(self) -> int:
        return int(self._read("SELECT count(*) FROM files")[0][0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
