"""Opening Milvus: Milvus Lite per operation, a remote server per index object.

**Milvus Lite** (a local path; 3.x stores a directory) runs in-process: the
first client of a path starts a gRPC server thread for it, and that server
holds ``flock`` on the database's ``LOCK`` file, so a second *process*
cannot open it until the first releases the server. Threads of one process
share one server through ``LITE``: a refcount per absolute path and a linger
(``LINGER_S`` after the last operation; the warm engine holds it for
``engine.lite_hold_s``, ``LiteServers.hold``), so back-to-back operations do
not pay the open (~25 ms warm, 100-250 ms cold). A memlane process that
finds the database held asks the engines of its ``MEMLANE_HOME`` to let go
(``engine.release_lite``); they do once no operation of theirs runs.
``Connection.generation`` names the server and how often something other
than a memlane index used it: an index trusts its ledger's mirror of the
collection while it is unchanged (no other process can write meanwhile).

A failed open is retried on the backoff delays; a held ``LOCK`` is then
reported as ``IndexBusyError`` naming who holds it (pymilvus only says
"Open local milvus failed"); inside a search both waits share its one wait
budget (core/waits.py). **A server** (``http(s)://``, Zilliz Cloud): one
client per index object, closed with it, connected with a short timeout.
pymilvus is imported lazily, only here and when a Milvus index is used.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memlane.core.errors import MemlaneError
from memlane.core.locks import describe_holders, lock_fd, lock_holders
from memlane.core.native import at_exit, native_call
from memlane.core.waits import LockWaitedOut, acquire_bounded, retry_delays_ms, spend
from memlane.index.protocol import IndexBusyError, IndexUnavailableError

log = logging.getLogger(__name__)

#: How long a released Lite server stays up for the next operation of this
#: process (the contract's bound: another process waits at most this long),
#: unless the process holds it (the warm engine: ``LiteServers.hold``).
LINGER_S = 0.2
#: How long a process finding a Lite database held waits for each engine it asks.
ASK_ENGINE_S = 1.0
#: Connect timeout for a Milvus server: an unreachable URI fails in this.
CONNECT_TIMEOUT_S = 3.0
LITE_SCHEME = "milvus-lite://"
_REMOTE_SCHEMES = ("http://", "https://", "tcp://", "unix:")
_LOGGERS = ("pymilvus", "milvus_lite", "grpc")


def is_remote(uri: str) -> bool:
    return uri.startswith(_REMOTE_SCHEMES)


def lite_path(uri: str) -> Path:
    """The absolute database path of a Milvus Lite URI (``~`` expanded; the
    ``milvus-lite://`` form ``display_uri`` shows is accepted too)."""
    return Path(uri.removeprefix(LITE_SCHEME)).expanduser().absolute()


def display_uri(uri: str) -> str:
    """Where the index lives, safe to show: ``milvus-lite:///abs/path`` or the
    server URL without any user:password."""
    if not is_remote(uri):
        return f"{LITE_SCHEME}{lite_path(uri)}"
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def quiet_client_logs() -> None:
    """pymilvus and Milvus Lite log tracebacks for errors memlane reports in
    one line; they stay quiet unless memlane itself logs at debug level."""
    if logging.getLogger("memlane").isEnabledFor(logging.DEBUG):
        return
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def lock_is_held(path: Path) -> bool:
    """Whether another process holds the Lite database's LOCK (a non-blocking
    probe, released at once)."""
    lock = path / "LOCK"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        lock_fd(fd, wait=False)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases the probe's lock, if it got it
    return False


INSTALL_HINT = "install the Milvus extra: pip install 'memlane[milvus]'"


def milvus_client_class(*, lite: bool) -> Any:
    """pymilvus's ``MilvusClient`` (and, for a local path, Milvus Lite), or a
    one-line error saying which package is missing and how to install it."""
    try:
        from pymilvus import MilvusClient

        if lite:
            import milvus_lite  # noqa: F401 - only checks it is installed
    except ImportError as exc:
        raise IndexUnavailableError(
            f"index.backend is milvus but {exc.name or 'pymilvus'} is not installed",
            hint=INSTALL_HINT,
        ) from None
    return MilvusClient


def _reason(exc: BaseException) -> str:
    """The one-line cause inside a pymilvus exception."""
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def translate(exc: BaseException, uri: str) -> MemlaneError:
    """A pymilvus failure as the one-line error the user sees."""
    if isinstance(exc, MemlaneError):
        return exc
    shown = display_uri(uri)
    reason = _reason(exc)
    lowered = reason.lower()
    if any(word in lowered for word in ("auth", "token", "credential", "permission denied")):
        return IndexUnavailableError(
            f"Milvus at {shown} refused the token ({reason})",
            hint="check index.token (env:VAR must hold a valid token)",
        )
    if is_remote(uri):
        return IndexUnavailableError(
            f"cannot reach Milvus at {shown} ({reason})", hint="start it or fix index.uri"
        )
    return IndexUnavailableError(
        f"cannot use the Milvus Lite database {lite_path(uri)} ({reason})",
        hint="fix index.uri, or move the path aside to start a new database",
    )


def _lite_open_error(path: Path, exc: BaseException) -> MemlaneError:
    if path.is_file():
        return IndexUnavailableError(
            f"{path} is a file, not a Milvus Lite 3 database (a directory); it may be "
            "from Milvus Lite 2.x",
            hint="point index.uri at another path, or move the file aside",
        )
    if path.suffix != ".db":
        return IndexUnavailableError(
            f"the Milvus Lite path {path} does not end in .db",
            hint="Milvus Lite opens only paths ending in .db; fix index.uri",
        )
    return translate(exc, str(path))


def busy_error(path: Path) -> IndexBusyError:
    who = describe_holders(lock_holders(path / "LOCK"))
    return IndexBusyError(
        f"the Milvus Lite database {path} is in use by another process (locked); held by {who}",
        hint="try again, or use a Milvus server for several processes",
    )


@dataclass
class _LiteEntry:
    client: Any
    users: int = 0
    timer: threading.Timer | None = None
    written: set[str] = field(default_factory=set)  # flushed before the server stops
    let_go: bool = False  # another process asked: stop once nobody uses it
    serial: int = 0  # this server among those the process started
    foreign: int = 0  # acquisitions by anything but a memlane index


class LiteServers:
    """Process-wide Milvus Lite clients, one per absolute path, refcounted,
    released ``LINGER_S`` after their last user."""

    def __init__(self, linger_s: float = LINGER_S) -> None:
        self.linger_s = linger_s
        #: True in a process that holds its databases (the warm engine).
        self.holding = False
        #: Servers started by this process (each start costs 25-250 ms).
        self.opens = 0
        self._lock = threading.Lock()
        self._entries: dict[Path, _LiteEntry] = {}
        self._exit_hook = False
        # Held while a server starts or stops: an open racing a stop would
        # get the stopping server's port from milvus_lite and lose it.
        self._transition = threading.Lock()

    def hold(self, seconds: float) -> None:
        """Keep each database open *seconds* after its last operation instead of
        ``LINGER_S`` (never less): the warm engine, one client for everything it
        serves. Another memlane process may still ask for it (``let_go``)."""
        self.linger_s = max(seconds, LINGER_S)
        self.holding = True

    def let_go(self, path: Path) -> bool:
        """Another process asks for the database at *path*: stop its server now
        when no operation uses it (True), else as soon as the last one ends."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                return False
            if entry.users > 0:
                entry.let_go = True
                return False
        self._stop_idle(path, entry)
        return True

    def state(self) -> dict[str, object]:
        """``memlane engine status``: databases open, servers started, linger."""
        with self._lock:
            open_paths = sorted(str(path) for path in self._entries)
        return {"open": open_paths, "opens": self.opens, "linger_s": self.linger_s}

    def written(self, path: Path, collection: str) -> None:
        """``collection`` at ``path`` was written: flush it before the server stops."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:
                entry.written.add(collection)

    def release_all(self) -> None:
        """Stop every server (flushing what was written): at exit, before
        the servers' thread pools stop taking calls."""
        with self._transition:
            with self._lock:
                entries = list(self._entries.items())
                self._entries.clear()
            for path, entry in entries:
                if entry.timer is not None:
                    entry.timer.cancel()
                self._stop_server(path, entry)

    def acquire(
        self,
        path: Path,
        delays_ms: Sequence[int],
        sleep: Callable[[float], None] = time.sleep,
        *,
        index: bool = False,
    ) -> Any:
        """A client of ``path`` (``index``: for a memlane index); pairs with ``release``."""
        client = self._join(path, foreign=not index)
        if client is not None:
            return client
        try:  # another thread may be opening it, waiting out another process
            acquire_bounded(self._transition)
        except LockWaitedOut:
            raise busy_error(path) from None
        try:
            client = self._join(path, foreign=not index)  # opened meanwhile
            if client is not None:
                return client
            client = self._open(path, delays_ms, sleep)
            with self._lock:
                self.opens += 1
                self._entries[path] = _LiteEntry(client, 1, serial=self.opens)
            return client
        finally:
            self._transition.release()

    def _join(self, path: Path, *, foreign: bool) -> Any | None:
        """The open client of ``path`` with one more user, if there is one."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                return None
            entry.foreign += foreign
            if entry.timer is not None:
                entry.timer.cancel()
                entry.timer = None
            entry.users += 1
            return entry.client

    def generation(self, path: Path) -> tuple[int, int] | None:
        with self._lock:
            entry = self._entries.get(path)
            return None if entry is None else (entry.serial, entry.foreign)

    def release(self, path: Path) -> None:
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                return
            entry.users -= 1
            if entry.users > 0:
                return
            if self.linger_s > 0 and not entry.let_go:
                timer = threading.Timer(self.linger_s, self._expire, (path, entry))
                timer.daemon = True
                entry.timer = timer
                timer.start()
                return
        self._stop_idle(path, entry)

    def release_now(self, path: Path) -> None:
        """Stop an idle server at once (a drop or reset that must let go)."""
        self._stop_idle(path, None)

    def _expire(self, path: Path, entry: _LiteEntry) -> None:
        try:
            with native_call():  # at exit, release_all stops it instead
                self._stop_idle(path, entry)
        except Exception:
            # A timer thread has no caller to report to; at interpreter
            # exit milvus_lite may already be torn down.
            log.debug("stopping the Milvus Lite server of %s failed", path, exc_info=True)

    def _stop_idle(self, path: Path, expected: _LiteEntry | None) -> None:
        """Stop the server of ``path`` if nobody uses it (and it is still
        ``expected``). The check and the stop happen under ``_transition``,
        so an exit hook or an open waits for a stop under way."""
        with self._transition:
            with self._lock:
                entry = self._entries.get(path)
                if entry is None or entry.users > 0:
                    return
                if expected is not None and entry is not expected:
                    return
                if entry.timer is not None:
                    entry.timer.cancel()
                self._entries.pop(path)
            self._stop_server(path, entry)

    @staticmethod
    def _stop_server(path: Path, entry: _LiteEntry) -> None:
        from milvus_lite.server_manager import server_manager_instance

        # Milvus Lite keeps new rows in its write-ahead log until a flush,
        # and every later open replays that log: unflushed, a few thousand
        # rows cost seconds on each open; flushed, ~0.3 s. One flush per
        # server session, not per write, keeps segments few.
        for collection in sorted(entry.written):
            with contextlib.suppress(Exception):
                entry.client.flush(collection_name=collection)
        with contextlib.suppress(Exception):
            entry.client.close()
        server_manager_instance.release_server(str(path))

    def _open(self, path: Path, delays_ms: Sequence[int], sleep: Callable[[float], None]) -> Any:
        MilvusClient = milvus_client_class(lite=True)

        quiet_client_logs()  # after the import: pymilvus sets its levels on import
        path.parent.mkdir(parents=True, exist_ok=True)
        attempts = [*retry_delays_ms(delays_ms), None]  # inside a read: its budget's
        asked = self.holding  # an engine asks no one: it is the one others ask
        for delay in attempts:
            tried = time.monotonic()
            try:
                client = MilvusClient(uri=str(path))
            except Exception as exc:
                if not (path.is_dir() and lock_is_held(path)):
                    raise _lite_open_error(path, exc) from None
                if not asked:
                    asked = True
                    if ask_engines_to_let_go(path):
                        continue  # one let go: try again at once
                if delay is not None:
                    sleep(delay / 1000)
                spend(time.monotonic() - tried)  # a read's wait budget pays for it
                if delay is None:
                    raise busy_error(path) from None
                continue
            self._hook_exit()
            return client
        raise busy_error(path)  # pragma: no cover - the loop returns or raises

    def _hook_exit(self) -> None:
        """Stop (and flush) our servers when the interpreter exits, once no
        operation is in flight and while the server's gRPC thread pool still
        takes calls (core/native.py's exit hooks run before thread pools stop)."""
        if self._exit_hook:
            return
        self._exit_hook = True
        at_exit(self.release_all)


def ask_engines_to_let_go(path: Path) -> bool:
    """Ask every warm engine of this ``MEMLANE_HOME`` to let go of the Lite
    database at *path* (``engine.release_lite``); True when one did. Best
    effort: an engine that does not answer within ``ASK_ENGINE_S`` is skipped."""
    from memlane.core import engine_client, link

    if link.engine_disabled():
        return False
    home = link.memlane_home()
    released = False
    for info in sorted(Path(link.engine_dir(home)).glob("*.json")):
        place = link.Place(home, info.stem)
        try:
            with engine_client.Client.open(
                place, "milvus-lite", str(path.parent), time.monotonic() + ASK_ENGINE_S, start=False
            ) as client:
                answer = client.call("engine.release_lite", {"path": str(path)}, ASK_ENGINE_S)
        except (link.EngineUnavailable, engine_client.EngineError):
            continue
        released = released or (isinstance(answer, dict) and answer.get("released") is True)
    return released


#: The one registry of this process.
LITE = LiteServers()

#: A server that could not be reached is not tried again for this long by any
#: index object of this process (a short negative cache).
UNREACHABLE_RETRY_S = 5.0
UNREACHABLE: dict[str, tuple[float, MemlaneError]] = {}


class Connection:
    """How an index object reaches its Milvus: ``with conn.client() as c``
    is one operation."""

    def __init__(
        self,
        uri: str,
        *,
        token: str | None = None,
        backoff_delays_ms: Sequence[int] = (),
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        registry: LiteServers | None = None,
    ) -> None:
        self.raw_uri = uri
        self.remote = is_remote(uri)
        self.path = None if self.remote else lite_path(uri)
        self.token = token
        self.backoff_delays_ms = tuple(backoff_delays_ms)
        self.connect_timeout_s = connect_timeout_s
        self._registry = registry or LITE
        self._remote_client: Any | None = None
        self._lock = threading.Lock()

    @property
    def shown(self) -> str:
        return display_uri(self.raw_uri)

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A connected client for one operation; pymilvus errors raised in
        the block come out as one-line ``MemlaneError``s."""
        # A gRPC call on a daemon thread must not be cut by the interpreter's
        # exit: the exit waits for this operation to end (core/native.py).
        with native_call():
            path = self.path
            if path is None:
                client = self._remote()
            else:
                client = self._registry.acquire(path, self.backoff_delays_ms, index=True)
            try:
                yield client
            except MemlaneError:
                raise
            except Exception as exc:
                raise translate(exc, self.raw_uri) from exc
            finally:
                if path is not None:
                    self._registry.release(path)

    def _remote(self) -> Any:
        with self._lock:
            if self._remote_client is None:
                failed = UNREACHABLE.get(self.raw_uri)
                if failed is not None and time.monotonic() < failed[0]:
                    # Said a moment ago: fail at once instead of waiting
                    # out the connect timeout again (a search right after
                    # its failed catch-up index run).
                    raise IndexUnavailableError(failed[1].message, failed[1].hint)
                MilvusClient = milvus_client_class(lite=False)
                quiet_client_logs()

                kwargs: dict[str, Any] = {"uri": self.raw_uri, "timeout": self.connect_timeout_s}
                if self.token:
                    kwargs["token"] = self.token
                try:
                    self._remote_client = MilvusClient(**kwargs)
                except Exception as exc:
                    error = translate(exc, self.raw_uri)
                    UNREACHABLE[self.raw_uri] = (time.monotonic() + UNREACHABLE_RETRY_S, error)
                    raise error from None
                UNREACHABLE.pop(self.raw_uri, None)
            return self._remote_client

    def generation(self) -> tuple[int, int] | None:
        """Lite, in an operation: (server, foreign uses); None for a server."""
        return None if self.path is None else self._registry.generation(self.path)

    def written(self, collection: str) -> None:
        """``collection`` was written in the current operation."""
        if self.path is not None:
            self._registry.written(self.path, collection)

    def release_now(self) -> None:
        """Let another process have a Lite database at once (after a drop)."""
        if self.path is not None:
            self._registry.release_now(self.path)

    def close(self) -> None:
        with self._lock:
            client, self._remote_client = self._remote_client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
