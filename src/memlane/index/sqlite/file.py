"""One SQLite index file shared by many processes: the common machinery.

Both SQLite files memlane keeps per collection, the markdown index
(``notes.SqliteIndex``) and the sessions index (``sessions.SessionStore``),
are derived data opened by many processes at once (sidecars, hooks, the
CLI). Each holds a ``SqliteFile``:

- opening: WAL, a busy retry around the journal-mode switch, and a shared
  ``file_lock`` while connecting so a rebuild cannot swap the file between
  our connect and recording which file we connected to;
- identity: before every operation, reopen when another process replaced
  the file (it moved a damaged one aside);
- ``run``: run an operation; on a moved file reconnect and retry; on damage
  move the file aside (``recovery.py``), recreate it, delete the damaged
  copy and retry once; a lock
  held past the busy timeout becomes ``IndexBusyError`` naming who holds it;
- inside a read's wait budget (core/waits.py) every lock wait (SQLite's,
  the rebuild lock while opening, this object's thread lock) is bounded;
- ``write``: short write transactions; each bumps the generation counter
  (``dense_sync``) and now and then prunes old tombstones.

What differs between the two files is a ``FileKind`` the file is given:
the schema check or creation on open, what a rebuild means and how it is
recorded, the names and hints of its messages, and the tunables read at
call time (busy timeout, tombstone window).

Tuning knobs (module constants, read at call time, so a test or an embedder
of memlane may shorten them): ``BUSY_TIMEOUT_S``, ``OPEN_RETRY_S``,
``TOMBSTONE_KEEP_GENERATIONS``, ``TOMBSTONE_PRUNE_EVERY``.

Opening a connection (PRAGMAs, the ``connection_hook`` seam) is
``connect.py``; the statements around an operation's own SQL (read
snapshots, the meta table) are ``statements.py``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from memlane.core.diskspace import disk_full_error
from memlane.core.errors import IndexCorruptError, MemlaneError
from memlane.core.faults import step
from memlane.core.waits import LockWaitedOut, acquire_bounded, spend, sqlite_wait_s, waited_s
from memlane.index.legs import lexical, vector_file
from memlane.index.legs.dense import BoundMatrix, DenseMatrix
from memlane.index.legs.dense_sync import exact_vectors, synced_matrix
from memlane.index.protocol import DimensionMismatchError, IndexBusyError
from memlane.index.sqlite import schema
from memlane.index.sqlite.busy import rebuild_lock_error, thread_busy_error, write_lock_holder
from memlane.index.sqlite.connect import configure, connect
from memlane.index.sqlite.connect import connection_hook as connection_hook
from memlane.index.sqlite.recovery import (
    SQLITE_READONLY_DBMOVED,
    FileId,
    corruption_reason,
    discard_moved_aside,
    file_id,
    file_lock,
    is_busy,
    is_full,
    move_aside,
    remove_damaged_copies,
)
from memlane.index.sqlite.statements import (
    keep_written_vectors,
    prune_tombstones,
    read,
    read_meta,
    rollback,
)

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
OPEN_RETRY_S = 0.05
# Tombstones older than this many generations are pruned; a process whose
# matrix is older than the pruned range reloads it fully instead.
TOMBSTONE_KEEP_GENERATIONS = 1000
TOMBSTONE_PRUNE_EVERY = 100  # generations between prune passes

T = TypeVar("T")


class DamagedIndex(Exception):
    """The file is a readable SQLite database but not a usable index."""


class FileKind(Protocol):
    """What one kind of index file (notes, sessions) says and does where the
    common machinery leaves it open."""

    #: How messages name the file ("index", "session index").
    label: str
    #: The fault steps of its write transactions (core/faults.py).
    fault_area: str
    #: In ``run``, test "busy" before "damaged": a lock error whose message
    #: also reads like damage (a virtual table's constructor that met a lock)
    #: is then reported busy instead of rebuilding the file.
    busy_before_damage: bool
    #: The hints of the busy error, of a failed recreation, of damage right
    #: after recreating (None: no hint).
    busy_hint: str
    recreate_hint: str
    damaged_hint: str | None

    def validate_or_create(self, file: SqliteFile, conn: sqlite3.Connection) -> None:
        """Check (or create, or upgrade) the schema of the just-opened file.

        Raise ``DamagedIndex`` (or let SQLite's corruption error through)
        when the file is not usable: it is then moved aside and recreated.
        """
        ...

    def record_rebuild(self, file: SqliteFile, reason: str, target: Path | None) -> None:
        """Record that the damaged file was replaced by a fresh one.

        ``target`` is where the damaged file went, or None when another
        process had already moved it aside and recreated it.
        """
        ...

    def replaced_on_disk(self, file: SqliteFile, rebuilt_meanwhile: bool) -> None:
        """The file we held open was replaced by another process and we
        reopened it; ``rebuilt_meanwhile`` when reopening rebuilt it again."""
        ...

    def busy_timeout_s(self) -> float:
        """SQLite's busy wait, also the open retry's deadline (read per call)."""
        ...

    def tombstone_window(self) -> tuple[int, int]:
        """(generations of tombstones kept, generations between prune passes)."""
        ...

    def busy_while_opening(self, exc: BaseException) -> bool:
        """Whether an error met while opening is a lock worth retrying."""
        ...


def _file_moved(exc: BaseException) -> bool:
    """SQLITE_READONLY_DBMOVED: our file was renamed or unlinked under us."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code == SQLITE_READONLY_DBMOVED


class SqliteFile:
    """One SQLite file, one connection per object, shared by its threads."""

    #: Whether searches may write the vector file (a read-only view only maps it).
    writes_vectors = True

    def __init__(self, path: Path | str, lexical_leg: lexical.LexicalLeg, kind: FileKind) -> None:
        self.path = Path(path).expanduser().absolute()
        self.kind = kind
        # One connection per object, shared by the engine's threads (search
        # and the background indexer/ingestor) under this lock.
        self.lock = threading.RLock()
        self._reason_lock, self._rebuilt_reason = threading.Lock(), cast(str | None, None)
        self._conn: sqlite3.Connection | None = None
        self._busy_ms = -1  # the busy timeout set on the connection
        self._file_id: FileId | None = None
        self._dense: DenseMatrix | None = None
        #: The memory-mapped vector file beside the index (legs/vector_file.py).
        self.vectors_path = vector_file.path_for(self.path)
        self.lexical = lexical_leg
        self._rebuild_count = 0  # _check_identity: did reopening rebuild?
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock:
            self._open()
        # A damaged copy a killed rebuild (or an older memlane) left behind.
        remove_damaged_copies(self.path)

    def wait_s(self) -> float:
        """The busy wait for the next statement: bounded by a read's wait budget."""
        return sqlite_wait_s(self.kind.busy_timeout_s())

    # -- opening, identity, rebuild ------------------------------------------------

    def _open(self) -> None:
        # Switching a brand-new file to WAL while another process creates the
        # schema can answer SQLITE_BUSY at once, without the busy handler
        # (sqlite's journal-mode change is not retried): retry it here.
        started = time.monotonic()
        deadline = started + self.wait_s()
        while True:
            try:
                # Shared lock: a rebuild (exclusive) cannot swap the file between
                # our connect and recording which file we connected to.
                with file_lock(self.path, exclusive=False, bounded=True):
                    self._connect()
                self.kind.validate_or_create(self, self.connection())
                return
            except LockWaitedOut as exc:
                raise rebuild_lock_error(self.kind.label, self.path, exc.spent_s) from None
            except (sqlite3.DatabaseError, DamagedIndex) as exc:
                reason = _damage_reason(exc)
                if reason is None:
                    self.close_connection()
                    retry = self.kind.busy_while_opening(exc)
                    if retry and time.monotonic() < deadline:
                        time.sleep(OPEN_RETRY_S)
                        continue
                    spend(time.monotonic() - started if retry else 0)
                    translated = self._translate(exc)
                    if translated is exc:
                        raise
                    raise translated from exc
                self._rebuild(reason)
                return

    def _connect(self) -> None:
        wait_s = self.wait_s()
        conn = connect(self.path, wait_s)
        self._conn = conn
        self._busy_ms = round(wait_s * 1000)
        # Recorded before the first read: a file that turns out damaged is
        # moved aside only if it is still this very file (recovery.move_aside).
        self._file_id = file_id(self.path)
        configure(conn)

    def _rebuild(self, reason: str) -> None:
        """Move the damaged file aside and start a fresh, empty one."""
        damaged = self._file_id
        self._dense = None
        with file_lock(self.path, exclusive=True):
            # Move first, close after: SQLite skips the close-time checkpoint
            # (and the unlink of -wal/-shm *by name*) for a file that moved,
            # so the damaged WAL goes aside intact and, above all, a stale
            # connection can never delete the files of the fresh one.
            target = move_aside(self.path, damaged)
            self.close_connection()
            try:
                self._connect()
                self.kind.validate_or_create(self, self.connection())
            except (sqlite3.DatabaseError, DamagedIndex) as exc:
                self.close_connection()
                raise IndexCorruptError(
                    f"{self.kind.label} {self.path} is damaged and could not be recreated: {exc}",
                    hint=self.kind.recreate_hint,
                ) from exc
            if target is not None:
                # The fresh file works: the damaged one holds nothing the
                # markdown does not, and must not outlive a forget (ADR 0011).
                discard_moved_aside(target)
        self.kind.record_rebuild(self, reason, target)
        self._rebuild_count += 1

    def _check_identity(self) -> None:
        """Reopen when the file on disk is no longer the one we hold open.

        Another process may have moved a damaged file aside; writing on into
        our descriptor of the old file would silently lose those writes.
        """
        if self._conn is not None and file_id(self.path) == self._file_id:
            return
        had_connection = self._conn is not None
        rebuilds = self._rebuild_count
        self.close_connection()
        self._dense = None
        self._open()
        if had_connection:
            self.kind.replaced_on_disk(self, self._rebuild_count != rebuilds)

    def close_connection(self) -> None:
        self.lexical.reset()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None

    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"{self.kind.label} connection is not open")
        return self._conn

    # -- the vector matrix -----------------------------------------------------------

    @property
    def dense_matrix(self) -> DenseMatrix | None:
        """The in-memory vector matrix this file's searches use (see
        ``SqliteIndex.dense_matrix``)."""
        return self._dense

    def forget_dense(self) -> None:
        """Drop the vector matrix: the next dense search reloads it."""
        self._dense = None

    def synced_dense(
        self, conn: sqlite3.Connection, meta: Mapping[str, Any]
    ) -> tuple[BoundMatrix | None, int | None]:
        """The vector matrix, brought in line with the rows (patched, mapped
        or reloaded), bound to this read's float32 vectors for rescoring."""
        dense, dimension = synced_matrix(
            conn,
            meta,
            self._dense,
            self.vectors_path,
            write_vectors=self.writes_vectors,
            keep_written=lambda generation: keep_written_vectors(self.path, generation),
        )
        self._dense = dense
        if dense is None:
            return None, dimension
        return BoundMatrix(dense, lambda rowids: exact_vectors(conn, rowids)), dimension

    def prepare_dense(self, *, load: bool = True) -> None:
        """Bring the vector matrix (and the vector file, when due) up to the
        rows now: an indexing pass ends with it, so the next search neither
        reads every vector nor writes the file. ``load=False``: only a
        matrix this process already holds (a writer that never searched
        has nothing to keep in step)."""
        if not load and self._dense is None:
            return

        def op(conn: sqlite3.Connection) -> None:
            with read(conn):
                self.synced_dense(conn, read_meta(conn))

        try:
            self.run(op)
        except (MemlaneError, sqlite3.Error, OSError) as exc:
            # Only ahead of time: the pass's rows are written, and the next
            # search catches up itself. A busy or damaged file is its to report.
            log.info("%s not prepared for search (%s): the next search does it", self.path, exc)

    def query_dense(
        self,
        conn: sqlite3.Connection,
        meta: Mapping[str, Any],
        qvec: npt.NDArray[np.float32] | None,
        index_name: str,
    ) -> BoundMatrix | None:
        """The matrix a query vector is searched against; None when there is no dense leg.

        A query vector of another dimension is refused: cosine against it would be noise.
        """
        if qvec is None:
            return None
        dense, dimension = self.synced_dense(conn, meta)
        if dimension is not None and qvec.size != dimension:
            raise DimensionMismatchError(
                f"query vector dimension {qvec.size} does not match the {index_name} "
                f"dimension {dimension}",
                hint=f"search with the embedder the {index_name} was built with",
            )
        return dense if dense is not None and len(dense) > 0 else None

    # -- the rebuild notice ----------------------------------------------------------

    @property
    def rebuilt_reason(self) -> str | None:
        """Why the file was found damaged (or replaced); popped once by a surface."""
        return self._rebuilt_reason

    @rebuilt_reason.setter
    def rebuilt_reason(self, reason: str | None) -> None:
        with self._reason_lock:
            self._rebuilt_reason = reason

    def pop_rebuilt_reason(self) -> str | None:
        """Return and clear ``rebuilt_reason`` (so the notice is shown once);
        never waits for an operation another thread runs on the file."""
        with self._reason_lock:
            reason, self._rebuilt_reason = self._rebuilt_reason, None
            return reason

    def close(self) -> None:
        with self.lock:
            self.close_connection()
            self._dense = None

    # -- running operations ----------------------------------------------------------

    def _translate(self, exc: BaseException) -> BaseException:
        if isinstance(exc, sqlite3.DatabaseError) and is_busy(exc):
            waited = waited_s(max(self._busy_ms, 0) / 1000)
            return IndexBusyError(
                f"{self.kind.label} {self.path} stayed locked by another process for "
                f"{waited:.2g} s (its write lock is held by {write_lock_holder(self.path)})",
                hint=self.kind.busy_hint,
            )
        if isinstance(exc, sqlite3.DatabaseError) and is_full(exc, self.path):
            return disk_full_error(
                self.path,
                f"the {self.kind.label} could not be written (your memory files are not affected)",
            )
        return exc

    def run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` once; on damage rebuild, then run it once more.

        The retry makes a write land in the fresh file (nothing lost before
        the re-index) and makes a read answer from it (empty).
        """
        with self.guard():
            self._check_identity()
            for attempt in range(2):
                conn = self.connection()
                self._set_busy_wait(conn)
                started = time.monotonic()
                try:
                    return op(conn)
                except (sqlite3.DatabaseError, DamagedIndex) as exc:
                    if attempt == 0 and _file_moved(exc):
                        self._check_identity()  # replaced mid-call: reopen, retry
                        continue
                    reason = _damage_reason(exc)
                    busy = isinstance(exc, sqlite3.DatabaseError) and is_busy(exc)
                    if busy:
                        spend(time.monotonic() - started)  # a read's budget paid for it
                    if reason is None or (busy and self.kind.busy_before_damage):
                        translated = self._translate(exc)
                        if translated is exc:
                            raise
                        raise translated from exc
                    if attempt:
                        raise IndexCorruptError(
                            f"{self.kind.label} {self.path} is damaged right after being "
                            f"recreated: {reason}",
                            hint=self.kind.damaged_hint,
                        ) from exc
                    self._rebuild(reason)
            raise AssertionError("unreachable")

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """This object's thread lock; inside a read's wait budget, bounded."""
        try:
            acquire_bounded(self.lock)
        except LockWaitedOut as exc:
            raise thread_busy_error(self.kind.label, self.path, exc.spent_s) from None
        try:
            yield
        finally:
            self.lock.release()

    def _set_busy_wait(self, conn: sqlite3.Connection) -> None:
        """SQLite's busy timeout for this operation (a PRAGMA only when it changes)."""
        wanted = round(self.wait_s() * 1000)
        if wanted != self._busy_ms:
            conn.execute(f"PRAGMA busy_timeout = {int(wanted)}")
            self._busy_ms = wanted

    # -- transactions ------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self, conn: sqlite3.Connection) -> Iterator[int]:
        """A write transaction; yields its (already bumped) generation.

        The bump comes first so rows written and tombstones left by this
        transaction carry its generation number (``dense_sync``).
        """
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = conn.execute(
                "UPDATE meta SET value = value + 1 WHERE key = ? RETURNING value",
                (schema.META_GENERATION,),
            ).fetchall()
            if not rows:
                raise DamagedIndex("meta table lacks the generation counter")
            generation = int(rows[0][0])
            yield generation
            keep, every = self.kind.tombstone_window()
            if generation % every == 0:
                prune_tombstones(conn, generation - keep)
            step(f"{self.kind.fault_area}.before_commit")
            conn.execute("COMMIT")
            step(f"{self.kind.fault_area}.committed")
        except BaseException:
            rollback(conn)
            raise


def _damage_reason(exc: BaseException) -> str | None:
    if isinstance(exc, DamagedIndex):
        return str(exc)
    if isinstance(exc, sqlite3.DatabaseError):
        return corruption_reason(exc)
    return None
