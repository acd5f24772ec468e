"""``python -m memlane.hosts.server``: the warm engine, one process per user.

One per ``MEMLANE_HOME`` and setting of memlane's variables (core/link.py
says which files and why), holding a ``flock`` that a killed engine loses at
once. Whichever thin client needs it first starts it; it serves every host
and every project on one unix socket. A connection's first line says what it
is (core/link.py):

- ``H1 <pid>``: one Claude Code hook call (hosts/claude_code/hook.py's
  protocol): the hook input follows, then the bytes to print are answered;
- ``J1 {client, cwd, pid, ...}``: a JSON-RPC connection (hosts/server/rpc.py):
  pi's session through ``memlane sidecar``, ``memlane mcp``'s tool calls, a
  CLI command.

It exits after ``engine.idle_s`` (default 600 s) with no connection open, no
call for that long and nothing left to do, on ``memlane engine stop``, on
SIGTERM or SIGINT, and when its socket is removed or replaced; each way,
every open session is ended first, so its captures are written
(docs/architecture.md, "The warm engine").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.core.link import (
    CODEX_HOOK_HEADER,
    HOOK_HEADER,
    RPC_HEADER,
    SOCKET_PATH_MAX,
    EngineUnavailable,
    Place,
    make_private_dir,
    private_dir,
)
from memlane.core.process import rss_mb
from memlane.hosts.claude_code.hook_client import CLIENT as CLAUDE_CODE_HOOK_CLIENT
from memlane.hosts.mcp.tools import CODEX_HOOK_CLIENT
from memlane.hosts.server.hook_calls import serve_hook_call

log = logging.getLogger("memlane.engine")

#: How often the accept loop wakes to check the idle time and signals.
TICK_S = 0.5
#: Longest first line of a connection.
MAX_HEADER_BYTES = 64 * 1024
#: How often an idle engine looks for sessions whose agent process is gone.
ABANDONED_CHECK_S = 5.0
#: How long a closing engine waits for its connections' threads to end.
CLOSE_WAIT_S = 10.0
#: How long a starting engine waits for the lock an exiting one still holds.
LOCK_WAIT_S = 3.0
#: The engine's log is emptied at an engine's start once it is larger than this.
LOG_MAX_BYTES = 10 * 1024 * 1024
#: ``engine.idle_s`` when the configuration cannot be read.
DEFAULT_IDLE_S = 600.0
#: ``engine.lite_hold_s`` when the configuration cannot be read.
DEFAULT_LITE_HOLD_S = 60.0


def configured_idle_s() -> float:
    return _configured_seconds("engine.idle_s", DEFAULT_IDLE_S, "idle exit after")


def configured_lite_hold_s() -> float:
    return _configured_seconds("engine.lite_hold_s", DEFAULT_LITE_HOLD_S, "Milvus Lite held")


def _configured_seconds(key: str, default: float, what: str) -> float:
    from memlane.core.config.layers import load_config
    from memlane.core.errors import ConfigError

    try:
        value = load_config(None).get(key)
    except ConfigError as exc:
        # An engine that died here would make every client wait out its limit;
        # each call reports the bad setting instead (its session loads it too).
        log.error("%s (%s): %s %.0f s", exc.message, exc.hint, what, default)
        return default
    return float(value) if isinstance(value, int | float) else default


def _full_command_line(argv: list[str], clock: Clock) -> int:
    """One whole ``memlane`` command line, for the commands a client hands over."""
    from memlane.cli.main import main

    return main(argv, clock=clock)


class Engine:
    """The accept loop, the idle rule, and what every connection shares."""

    def __init__(
        self, listener: socket.socket, idle_s: float, place: Place, path: str = ""
    ) -> None:
        from memlane.hosts.claude_code.events import Events
        from memlane.hosts.codex.events import CodexEvents
        from memlane.hosts.server.commands import Commands
        from memlane.hosts.server.projects import Projects

        self.listener = listener
        self.idle_s = idle_s
        self.place = place
        self.path = path
        self._inode = os.stat(path).st_ino if path else None
        self.projects = Projects(clock=_clock())
        self.events = Events(self.projects)
        self.codex_events = CodexEvents(self.projects)
        self.commands = Commands(self.projects, _full_command_line)
        self.stopping = threading.Event()
        self.started = SYSTEM_CLOCK.now().timestamp()
        self._lock = threading.Lock()
        self._active = 0  # connections open now (a pi session's stays open)
        self._served = threading.Condition(self._lock)  # a connection's thread ended
        self._clients: dict[str, int] = {}
        self._open: set[socket.socket] = set()
        self._calls = 0
        self._last = time.monotonic()
        self._next_check = self._last + ABANDONED_CHECK_S
        self._checking: threading.Thread | None = None
        self._said_busy = False  # the log says once why an idle engine stays

    # -- the accept loop -----------------------------------------------------------------

    def serve(self) -> None:
        self.listener.settimeout(TICK_S)
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                if self._idle():
                    log.info("idle for %.0f s: exiting", self.idle_s)
                    return
                if not self.reachable():
                    log.info(
                        "%s was removed or replaced: no client can reach this engine", self.path
                    )
                    return
                self._end_abandoned()
                continue
            except OSError:
                if self.stopping.is_set():
                    return
                raise
            with self._lock:
                self._active += 1
                self._calls += 1
                self._last = time.monotonic()
                self._open.add(conn)
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        log.info("asked to stop: ending the sessions")
        self.stopping.set()

    def _end_abandoned(self) -> None:
        """Every ``ABANDONED_CHECK_S``, off the accept loop (an end waits for the
        project's worker): end the sessions whose Claude Code died without a SessionEnd."""
        now = time.monotonic()
        if now < self._next_check or (self._checking is not None and self._checking.is_alive()):
            return
        self._next_check = now + ABANDONED_CHECK_S
        self._checking = threading.Thread(
            target=self._run_end_abandoned, name="memlane-abandoned", daemon=True
        )
        self._checking.start()

    def _run_end_abandoned(self) -> None:
        try:
            self.events.end_abandoned()
        except Exception:
            log.exception("ending the abandoned sessions failed")

    def reachable(self) -> bool:
        """Whether clients still find this engine's socket (MEMLANE_HOME may have been deleted)."""
        if self._inode is None:
            return True
        try:
            return os.stat(self.path).st_ino == self._inode
        except OSError:
            return False

    def _idle(self) -> bool:
        with self._lock:
            if self._active or time.monotonic() - self._last < self.idle_s:
                self._said_busy = False
                return False
        if not self.projects.busy() and not self.commands.busy():
            return True
        if not self._said_busy:
            # A first session's catch-up index, the model's first load: done
            # before the engine goes, or the next session starts them over.
            log.info(
                "idle for %.0f s, but work is under way (indexing, the model loading, "
                "a session ending, a command run in the background): exiting once it is done",
                self.idle_s,
            )
            self._said_busy = True
        return False

    # -- one connection ------------------------------------------------------------------

    def _serve_one(self, conn: socket.socket) -> None:
        client = "?"
        reader: Any = None
        try:
            with conn:
                reader = conn.makefile("rb")
                header = reader.readline(MAX_HEADER_BYTES)
                kind, _, rest = header.rstrip(b"\n").partition(b" ")
                if kind == HOOK_HEADER:
                    client = CLAUDE_CODE_HOOK_CLIENT
                    self._count(client, +1)
                    serve_hook_call(conn, reader, rest, self.events)
                elif kind == CODEX_HOOK_HEADER:
                    client = CODEX_HOOK_CLIENT
                    self._count(client, +1)
                    serve_hook_call(conn, reader, rest, self.codex_events)
                elif kind == RPC_HEADER:
                    meta = _meta(rest)
                    client = str(meta.get("client") or "unknown")
                    self._count(client, +1)
                    self._serve_rpc(conn, reader, meta)
                else:
                    conn.sendall(b"error\nunknown protocol: the first line must be H1 or J1\n")
        except OSError as exc:
            log.info("a %s client went away: %s", client, exc)
        finally:
            # The stream objects keep the socket open past its close: hang up
            # for real, so the client sees the end (a relay exits on it).
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            if reader is not None:
                reader.close()
            self._count(client, -1)
            with self._lock:
                self._open.discard(conn)
                self._active -= 1
                self._last = time.monotonic()
                if client == "mcp":
                    # An agent's MCP server hangs up when its agent exits: look for
                    # sessions whose agent is gone at the next tick, not in up to
                    # ABANDONED_CHECK_S (their captures are written, their warm
                    # workers free for the project's next session, sooner).
                    self._next_check = self._last
                self._served.notify_all()

    def _count(self, client: str, step: int) -> None:
        if client == "?":
            return
        with self._lock:
            self._clients[client] = self._clients.get(client, 0) + step
            if self._clients[client] <= 0:
                del self._clients[client]

    def _serve_rpc(self, conn: socket.socket, reader: Any, meta: dict[str, Any]) -> None:
        from memlane.hosts.jsonrpc import Connection
        from memlane.hosts.server.rpc import RpcSession

        writer = conn.makefile("wb")
        cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        pid = meta.get("pid") if isinstance(meta.get("pid"), int) else None
        agent_session = meta.get("agent_session")
        session = RpcSession(
            Connection(reader, writer),
            self.projects,
            Path(cwd or "/"),
            client=str(meta.get("client") or "unknown"),
            client_pid=pid,
            agent_session=agent_session if isinstance(agent_session, str) else None,
            engine=self,
            commands=self.commands,
        )
        try:
            session.run()
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    # -- what ``memlane engine status`` shows --------------------------------------------

    def status(self) -> dict[str, Any]:
        from memlane.core.version import __version__
        from memlane.engine.index_backend import milvus_lite_state

        with self._lock:
            clients = dict(self._clients)
            calls = self._calls
            idle_for = time.monotonic() - self._last
        return {
            "pid": os.getpid(),
            "version": __version__,
            "key": self.place.key,
            "socket": self.path,
            "log": self.place.log,
            "started_at": self.started,
            "uptime_s": round(SYSTEM_CLOCK.now().timestamp() - self.started, 1),
            "idle_s": self.idle_s,
            "idle_for_s": round(idle_for, 1),
            "connections": clients,
            "calls": calls,
            "rss_mb": rss_mb(),
            "projects": self.projects.describe(),
            "milvus_lite": milvus_lite_state(),
        }

    def close(self) -> None:
        """End every session (captures written), then hang up on every client still
        connected: a pi session's bridge exits, and pi starts the next engine."""
        from memlane.engine.index_backend import release_milvus_lite

        self.projects.close()
        release_milvus_lite()  # held while the engine ran: flushed and let go now
        with self._lock:
            still_open = list(self._open)
        for conn in still_open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        # Their threads end what the hang-up leaves them (a relay's session is
        # already ended): the engine's last word comes after theirs.
        deadline = time.monotonic() + CLOSE_WAIT_S
        with self._lock:
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._served.wait(left)


def _clock() -> Clock:
    """``MEMLANE_NOW``'s clock (it keys the engine: every client of this one set it
    alike), else the system's."""
    from memlane.core.clock import clock_from_env
    from memlane.core.errors import ConfigError

    try:
        return clock_from_env(os.environ)
    except ConfigError as exc:
        log.error("%s (%s): using the system clock", exc.message, exc.hint)
        return SYSTEM_CLOCK


def _meta(raw: bytes) -> dict[str, Any]:
    try:
        meta = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _trim_log() -> None:
    """Start the log afresh when it grew past ``LOG_MAX_BYTES`` (stderr is the log,
    opened for appending by the client that started this engine)."""
    try:
        if os.fstat(2).st_size > LOG_MAX_BYTES:
            os.ftruncate(2, 0)
    except OSError:
        pass


def _take_lock(place: Place) -> int | None:
    """The engine lock's descriptor, or None when another engine holds it."""
    from memlane.core.locks import lock_fd

    lock = os.open(place.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    # An engine that is going away (its socket removed) still holds the lock
    # for a moment: wait that long, then leave the place to the one that holds it.
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            lock_fd(lock, wait=False)
            break
        except OSError:
            if time.monotonic() >= deadline:
                os.close(lock)
                return None
            time.sleep(0.05)
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    return lock


def _socket_path(place: Place) -> str:
    """Where to bind: ``<key>.sock``, or a socket in a new private directory named
    in ``<key>.where`` when that path is too long (the lock is held)."""
    from memlane.core.atomic import write_atomic

    path = place.preferred_socket()
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path
    _remove_old_pointer(place)
    directory = tempfile.mkdtemp(prefix="memlane-", dir="/tmp")  # 0700, a fresh name
    path = os.path.join(directory, "engine.sock")
    write_atomic(Path(place.pointer), path + "\n")
    return path


def _remove_old_pointer(place: Place) -> None:
    """A killed engine's private socket directory, once ours to reuse."""
    old = place.socket_path()
    if old is None:
        return
    directory = os.path.dirname(old)
    if private_dir(directory) and os.path.basename(directory).startswith("memlane-"):
        with contextlib.suppress(OSError):
            os.unlink(old)
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _write_info(place: Place, path: str) -> None:
    from memlane.core.atomic import write_atomic
    from memlane.core.link import keyed_environment
    from memlane.core.version import __version__

    info = {
        "pid": os.getpid(),
        "started_at": SYSTEM_CLOCK.now().timestamp(),
        "socket": path,
        "log": place.log,
        "version": __version__,
        "python": sys.executable,
        "package": os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        "variables": sorted(keyed_environment()),
    }
    write_atomic(Path(place.info), json.dumps(info, indent=2, sort_keys=True) + "\n")


def main() -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MEMLANE_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s memlane engine[%(process)d]: %(levelname)s %(message)s",
    )
    place = Place()
    try:
        make_private_dir(place.directory)
    except EngineUnavailable as exc:
        log.error("%s", exc)
        return 1
    os.chdir(place.directory)  # hold no project's directory: every call names its own
    lock = _take_lock(place)
    if lock is None:
        log.info("another engine runs for %s: exiting", place.home)
        return 0
    path = _socket_path(place)
    if not private_dir(os.path.dirname(path)):
        log.error("%s is not a private directory of this user: not serving", os.path.dirname(path))
        return 1
    _trim_log()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a killed engine's socket; ours now, under the lock
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    _write_info(place, path)
    engine = Engine(listener, configured_idle_s(), place, path)
    from memlane.engine.index_backend import hold_milvus_lite

    # One Lite client for every session and call served, never re-opened per search.
    hold_milvus_lite(configured_lite_hold_s())
    log.info("serving %s on %s (idle exit after %.0f s)", place.home, path, engine.idle_s)

    def stop(signum: int, frame: object) -> None:
        if engine.stopping.is_set():
            # Asked twice: go now. What the sessions acknowledged is in their
            # capture logs, which the next engine writes.
            log.info("signal %d again: exiting at once", signum)
            os._exit(1)
        log.info("signal %d: ending the sessions", signum)
        engine.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        engine.serve()
    finally:
        # No new call reaches a closing engine: the next one starts another.
        if engine.reachable():
            with contextlib.suppress(OSError):
                os.unlink(path)
            if path != place.preferred_socket():
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(path))
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(place.info)
        # Another engine may start now; this one's sessions keep their
        # capture logs locked while they end, so it never takes them over.
        os.close(lock)
        engine.close()
        log.info("exited")
    return 0
