"""One SQLite index file shared by many processes: the common machinery.

Both SQLite files memlane keeps per collection, the markdown index
(``notes.SqliteIndex``) and the sessions index (``sessions.SessionStore``),
are derived data opened by many processes at once (sidecars, hooks, the
CLI). ``SqliteFile`` is what they share:

- opening: WAL, a busy retry around the journal-mode switch, and a shared
  ``file_lock`` while connecting so a rebuild cannot swap the file between
  our connect and recording which file we connected to;
- identity: before every operation, reopen when another process replaced
  the file (it moved a damaged one aside);
- ``_run``: run an operation; on a moved file reconnect and retry; on damage
  move the file aside (``recovery.py``), recreate it, delete the damaged
  copy and retry once; a lock
  held past the busy timeout becomes ``IndexBusyError`` naming who holds it;
- inside a read's wait budget (core/waits.py) every lock wait (SQLite's,
  the rebuild lock while opening, this object's thread lock) is bounded;
- ``_write``/``_read``: short transactions; every write bumps the generation
  counter (``dense_sync``) and now and then prunes old tombstones.

Subclasses supply the rest through hooks: ``_validate_or_create`` (the
schema check or creation on open), ``_record_rebuild`` and
``_replaced_on_disk`` (what a rebuild means and how it is recorded), the
busy/damage messages (``_busy_error``, ``_recreate_failed``,
``_damaged_after_recreate``, ``_label``), and the tunables read at call
time (``_busy_timeout_s``, ``_tombstone_window``).

Tuning knobs (module constants, read at call time, so a test or an embedder
of memlane may shorten them): ``BUSY_TIMEOUT_S``, ``OPEN_RETRY_S``,
``TOMBSTONE_KEEP_GENERATIONS``, ``TOMBSTONE_PRUNE_EVERY``.

Seam: ``connection_hook(hook)`` runs ``hook(connection)`` on every
connection these files open while it is active: to set extra PRAGMAs
(``secure_delete=OFF`` as many SQLite builds default to) or to make opening
fail (raise ``sqlite3.OperationalError``), e.g. in tests.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, cast

import numpy as np
import numpy.typing as npt

from memlane.core.diskspace import disk_full_error
from memlane.core.errors import IndexCorruptError
from memlane.core.faults import step
from memlane.core.types import SearchMode
from memlane.core.waits import LockWaitedOut, acquire_bounded, spend, sqlite_wait_s, waited_s
from memlane.index.legs import lexical
from memlane.index.legs.dense import DenseMatrix
from memlane.index.legs.dense_sync import synced_matrix
from memlane.index.protocol import DimensionMismatchError, IndexBusyError
from memlane.index.sqlite import schema
from memlane.index.sqlite.busy import rebuild_lock_error, thread_busy_error
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

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
OPEN_RETRY_S = 0.05
# Page cache per connection (KiB, as SQLite's negative cache_size): holds the
# hot FTS doclists of a 100k-chunk collection.
CACHE_SIZE_KIB = 32 * 1024
# Tombstones older than this many generations are pruned; a process whose
# matrix is older than the pruned range reloads it fully instead.
TOMBSTONE_KEEP_GENERATIONS = 1000
TOMBSTONE_PRUNE_EVERY = 100  # generations between prune passes

T = TypeVar("T")

ConnectionHook = Callable[[sqlite3.Connection], None]
# Hooks of active ``connection_hook`` blocks, run in order on every new connection.
_connection_hooks: list[ConnectionHook] = []
_hooks_lock = threading.Lock()


@contextlib.contextmanager
def connection_hook(hook: ConnectionHook) -> Iterator[None]:
    """Run ``hook(connection)`` on every connection opened while the block runs.

    A documented seam, process-wide (every thread, every ``SqliteFile``):
    the hook runs after memlane's own PRAGMAs and before the schema is
    read, so it can change a connection's settings (``PRAGMA
    secure_delete=OFF``, as many SQLite builds default to) or make the open
    fail by raising (``sqlite3.OperationalError`` reads as a failing disk or
    a refused open). Meant for tests and diagnostics; nothing in memlane
    installs one.
    """
    with _hooks_lock:
        _connection_hooks.append(hook)
    try:
        yield
    finally:
        with _hooks_lock:
            _connection_hooks.remove(hook)


class _DamagedIndex(Exception):
    """The file is a readable SQLite database but not a usable index."""


def _file_moved(exc: BaseException) -> bool:
    """SQLITE_READONLY_DBMOVED: our file was renamed or unlinked under us."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code == SQLITE_READONLY_DBMOVED


class SqliteFile:
    """One SQLite file, one connection per object, shared by its threads.

    Subclasses set their own attributes, then call ``__init__`` (which opens
    the file, so anything the hooks read must exist by then).
    """

    # How messages name the file ("index", "session index").
    _label: ClassVar[str] = "index"
    # The fault steps of its write transactions (core/faults.py).
    FAULT_AREA: ClassVar[str] = "index"
    # In ``_run``, test "busy" before "damaged": a lock error whose message
    # also reads like damage (a virtual table's constructor that met a lock)
    # is then reported busy instead of rebuilding the file.
    _busy_before_damage: ClassVar[bool] = False

    def __init__(self, path: Path | str, lexical_leg: lexical.LexicalLeg) -> None:
        self.path = Path(path).expanduser().absolute()
        # One connection per object, shared by the engine's threads (search
        # and the background indexer/ingestor) under this lock.
        self._lock = threading.RLock()
        self._reason_lock, self._rebuilt_reason = threading.Lock(), cast(str | None, None)
        self._conn: sqlite3.Connection | None = None
        self._busy_ms = -1  # the busy timeout set on the connection
        self._file_id: FileId | None = None
        self._dense: DenseMatrix | None = None
        self._lexical = lexical_leg
        self._rebuild_count = 0  # _check_identity: did reopening rebuild?
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._open()
        # A damaged copy a killed rebuild (or an older memlane) left behind.
        remove_damaged_copies(self.path)

    # -- hooks -------------------------------------------------------------------

    def _validate_or_create(self) -> None:
        """Check (or create, or upgrade) the schema of the just-opened file.

        Raise ``_DamagedIndex`` (or let SQLite's corruption error through)
        when the file is not usable: it is then moved aside and recreated.
        """
        raise NotImplementedError

    def _record_rebuild(self, reason: str, target: Path | None) -> None:
        """Record that the damaged file was replaced by a fresh one.

        ``target`` is where the damaged file went, or None when another
        process had already moved it aside and recreated it.
        """
        raise NotImplementedError

    def _replaced_on_disk(self, rebuilt_meanwhile: bool) -> None:
        """The file we held open was replaced by another process and we
        reopened it; ``rebuilt_meanwhile`` when reopening rebuilt it again."""
        raise NotImplementedError

    def _busy_error(self, waited_s: float) -> IndexBusyError:
        raise NotImplementedError

    def _recreate_failed(self, exc: BaseException) -> IndexCorruptError:
        """The damaged file was moved aside but a fresh one cannot be made."""
        raise NotImplementedError

    def _damaged_after_recreate(self, reason: str) -> IndexCorruptError:
        """The freshly recreated file is damaged too."""
        raise NotImplementedError

    def _busy_timeout_s(self) -> float:
        """SQLite's busy wait, also the open retry's deadline (read per call)."""
        return BUSY_TIMEOUT_S

    def _wait_s(self) -> float:
        """The busy wait for the next statement: bounded by a read's wait budget."""
        return sqlite_wait_s(self._busy_timeout_s())

    def _tombstone_window(self) -> tuple[int, int]:
        """(generations of tombstones kept, generations between prune passes)."""
        return TOMBSTONE_KEEP_GENERATIONS, TOMBSTONE_PRUNE_EVERY

    @staticmethod
    def _busy_while_opening(exc: BaseException) -> bool:
        """Whether an error met while opening is a lock worth retrying."""
        return isinstance(exc, sqlite3.DatabaseError) and is_busy(exc)

    # -- opening, identity, rebuild ------------------------------------------------

    def _open(self) -> None:
        # Switching a brand-new file to WAL while another process creates the
        # schema can answer SQLITE_BUSY at once, without the busy handler
        # (sqlite's journal-mode change is not retried): retry it here.
        started = time.monotonic()
        deadline = started + self._wait_s()
        while True:
            try:
                # Shared lock: a rebuild (exclusive) cannot swap the file between
                # our connect and recording which file we connected to.
                with file_lock(self.path, exclusive=False, bounded=True):
                    self._connect()
                self._validate_or_create()
                return
            except LockWaitedOut as exc:
                raise rebuild_lock_error(self._label, self.path, exc.spent_s) from None
            except (sqlite3.DatabaseError, _DamagedIndex) as exc:
                reason = self._damage_reason(exc)
                if reason is None:
                    self._close_connection()
                    if self._busy_while_opening(exc) and time.monotonic() < deadline:
                        time.sleep(OPEN_RETRY_S)
                        continue
                    spend(time.monotonic() - started if self._busy_while_opening(exc) else 0)
                    translated = self._translate(exc)
                    if translated is exc:
                        raise
                    raise translated from exc
                self._rebuild(reason)
                return

    def _connect(self) -> None:
        wait_s = self._wait_s()
        conn = sqlite3.connect(
            str(self.path),
            timeout=wait_s,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=False,
        )
        self._conn = conn
        self._busy_ms = round(wait_s * 1000)
        # Recorded before the first read: a file that turns out damaged is
        # moved aside only if it is still this very file (recovery.move_aside).
        self._file_id = file_id(self.path)
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{CACHE_SIZE_KIB}")
        conn.execute("PRAGMA temp_store=MEMORY")
        with _hooks_lock:
            hooks = list(_connection_hooks)
        for hook in hooks:
            hook(conn)

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
            self._close_connection()
            try:
                self._connect()
                self._validate_or_create()
            except (sqlite3.DatabaseError, _DamagedIndex) as exc:
                self._close_connection()
                raise self._recreate_failed(exc) from exc
            if target is not None:
                # The fresh file works: the damaged one holds nothing the
                # markdown does not, and must not outlive a forget (ADR 0011).
                discard_moved_aside(target)
        self._record_rebuild(reason, target)
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
        self._close_connection()
        self._dense = None
        self._open()
        if had_connection:
            self._replaced_on_disk(self._rebuild_count != rebuilds)

    def _close_connection(self) -> None:
        self._lexical.reset()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"{self._label} connection is not open")
        return self._conn

    @property
    def dense_matrix(self) -> DenseMatrix | None:
        """The in-memory vector matrix this object searches (read-only view).

        None until a dense search loads it, and again after a wipe, a model
        change or a rebuild. A search while the file's write generation is
        unchanged reuses the same object; small writes patch it in place; a
        full reload gives a new one. For diagnostics (``nbytes``, the
        ``generation`` it mirrors) and tests of that cache.
        """
        return self._dense

    def _synced_dense(
        self, conn: sqlite3.Connection, meta: Mapping[str, Any]
    ) -> tuple[DenseMatrix | None, int | None]:
        """The vector matrix, brought in line with the rows (patched, or reloaded)."""
        dense, dimension = synced_matrix(conn, meta, self._dense)
        self._dense = dense
        return dense, dimension

    def _query_dense(
        self,
        conn: sqlite3.Connection,
        meta: Mapping[str, Any],
        qvec: npt.NDArray[np.float32] | None,
        index_name: str,
    ) -> DenseMatrix | None:
        """The matrix a query vector is searched against; None when there is no dense leg.

        A query vector of another dimension is refused: cosine against it would be noise.
        """
        if qvec is None:
            return None
        dense, dimension = self._synced_dense(conn, meta)
        if dimension is not None and qvec.size != dimension:
            raise DimensionMismatchError(
                f"query vector dimension {qvec.size} does not match the {index_name} "
                f"dimension {dimension}",
                hint=f"search with the embedder the {index_name} was built with",
            )
        return dense if dense is not None and len(dense) > 0 else None

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
        with self._lock:
            self._close_connection()
            self._dense = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- running operations ----------------------------------------------------------

    @staticmethod
    def _damage_reason(exc: BaseException) -> str | None:
        if isinstance(exc, _DamagedIndex):
            return str(exc)
        if isinstance(exc, sqlite3.DatabaseError):
            return corruption_reason(exc)
        return None

    def _translate(self, exc: BaseException) -> BaseException:
        if isinstance(exc, sqlite3.DatabaseError) and is_busy(exc):
            return self._busy_error(waited_s(max(self._busy_ms, 0) / 1000))
        if isinstance(exc, sqlite3.DatabaseError) and is_full(exc, self.path):
            return disk_full_error(
                self.path,
                f"the {self._label} could not be written (your memory files are not affected)",
            )
        return exc

    def _run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` once; on damage rebuild, then run it once more.

        The retry makes a write land in the fresh file (nothing lost before
        the re-index) and makes a read answer from it (empty).
        """
        with self._guard():
            self._check_identity()
            for attempt in range(2):
                conn = self._connection()
                self._set_busy_wait(conn)
                started = time.monotonic()
                try:
                    return op(conn)
                except (sqlite3.DatabaseError, _DamagedIndex) as exc:
                    if attempt == 0 and _file_moved(exc):
                        self._check_identity()  # replaced mid-call: reopen, retry
                        continue
                    reason = self._damage_reason(exc)
                    busy = isinstance(exc, sqlite3.DatabaseError) and is_busy(exc)
                    if busy:
                        spend(time.monotonic() - started)  # a read's budget paid for it
                    if reason is None or (busy and self._busy_before_damage):
                        translated = self._translate(exc)
                        if translated is exc:
                            raise
                        raise translated from exc
                    if attempt:
                        raise self._damaged_after_recreate(reason) from exc
                    self._rebuild(reason)
            raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """This object's thread lock; inside a read's wait budget, bounded."""
        try:
            acquire_bounded(self._lock)
        except LockWaitedOut as exc:
            raise thread_busy_error(self._label, self.path, exc.spent_s) from None
        try:
            yield
        finally:
            self._lock.release()

    def _set_busy_wait(self, conn: sqlite3.Connection) -> None:
        """SQLite's busy timeout for this operation (a PRAGMA only when it changes)."""
        wanted = round(self._wait_s() * 1000)
        if wanted != self._busy_ms:
            conn.execute(f"PRAGMA busy_timeout = {int(wanted)}")
            self._busy_ms = wanted

    # -- transactions ------------------------------------------------------------------

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def _write(self, conn: sqlite3.Connection) -> Iterator[int]:
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
                raise _DamagedIndex("meta table lacks the generation counter")
            generation = int(rows[0][0])
            yield generation
            if generation % self._tombstone_window()[1] == 0:
                self._prune_tombstones(conn, generation)
            step(f"{self.FAULT_AREA}.before_commit")
            conn.execute("COMMIT")
            step(f"{self.FAULT_AREA}.committed")
        except BaseException:
            self._rollback(conn)
            raise

    @contextlib.contextmanager
    def _read(self, conn: sqlite3.Connection) -> Iterator[None]:
        """One read snapshot (WAL: never blocks, never blocked by a writer)."""
        conn.execute("BEGIN")
        try:
            yield
        finally:
            self._rollback(conn)  # read-only: ending it either way is the same

    def _prune_tombstones(self, conn: sqlite3.Connection, generation: int) -> None:
        floor = generation - self._tombstone_window()[0]
        if floor <= 0:
            return
        conn.execute("DELETE FROM tombstones WHERE gen <= ?", (floor,))
        conn.execute(
            "UPDATE meta SET value = max(value, ?) WHERE key = ?",
            (floor, schema.META_TOMBSTONE_FLOOR),
        )

    @staticmethod
    def _meta(conn: sqlite3.Connection) -> dict[str, Any]:
        return {key: value for key, value in conn.execute("SELECT key, value FROM meta")}


def search_mode(lexical: bool, dense: bool) -> SearchMode:
    """What a search that runs these legs is called."""
    return "semantic" if not lexical else "hybrid" if dense else "lexical"
