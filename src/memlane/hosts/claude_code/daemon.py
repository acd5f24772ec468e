"""``python -m memlane.hosts.claude_code.daemon``: the warm engine behind Claude Code's hooks.

One per user (``engine.lock`` under ``MEMLANE_HOME/claude-code``, a
``flock`` a killed engine loses at once), started on demand by the hook
client (hosts/claude_code/hook.py) and serving every project on a unix
socket. Each connection carries one hook call (the protocol in
hosts/claude_code/hook.py): a header naming the hook's parent process, the
hook input as Claude Code wrote it, and the bytes the hook is to print back.

It exits after ``daemon.idle_s`` (default 600 s) without a hook call and
with nothing left to do, and on SIGTERM or SIGINT; either way every open
session is ended first, so its captures are written (docs/claude-code-engine.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time

from memlane.hosts.claude_code.hook import engine_dir, memlane_home, private_dir, socket_path

log = logging.getLogger("memlane.claude_code")

#: How often the accept loop wakes to check the idle time and signals.
TICK_S = 0.5
#: Largest hook input accepted (a prompt with a pasted log is large; more is refused).
MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: How often an idle engine looks for sessions whose Claude Code process is gone.
ABANDONED_CHECK_S = 5.0
#: How long a starting engine waits for the lock an exiting one still holds.
LOCK_WAIT_S = 3.0
#: The engine's log is emptied at an engine's start once it is larger than this.
LOG_MAX_BYTES = 10 * 1024 * 1024
#: ``daemon.idle_s`` when the configuration cannot be read.
DEFAULT_IDLE_S = 600.0


def configured_idle_s() -> float:
    from memlane.core.config.layers import load_config
    from memlane.core.errors import ConfigError

    try:
        value = load_config(None).get("daemon.idle_s")
    except ConfigError as exc:
        # An engine that died here would make every hook wait out its limit;
        # each hook call reports the bad setting instead (its session loads it too).
        log.error("%s (%s): idle exit after %.0f s", exc.message, exc.hint, DEFAULT_IDLE_S)
        return DEFAULT_IDLE_S
    return float(value) if isinstance(value, int | float) else DEFAULT_IDLE_S


class Daemon:
    def __init__(self, listener: socket.socket, idle_s: float, path: str = "") -> None:
        from memlane.hosts.claude_code.events import Events
        from memlane.hosts.claude_code.projects import Projects

        self.listener = listener
        self.idle_s = idle_s
        self.path = path
        self._inode = os.stat(path).st_ino if path else None
        self.projects = Projects()
        self.events = Events(self.projects)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._last = time.monotonic()
        self._next_check = self._last + ABANDONED_CHECK_S
        self._checking: threading.Thread | None = None

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
                    log.info("%s was removed or replaced: no hook can reach this engine", self.path)
                    return
                self._end_abandoned()
                continue
            except OSError:
                if self.stopping.is_set():
                    return
                raise
            with self._lock:
                self._active += 1
                self._last = time.monotonic()
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

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
        """Whether hooks still find this engine's socket (MEMLANE_HOME may have been deleted)."""
        if self._inode is None:
            return True
        try:
            return os.stat(self.path).st_ino == self._inode
        except OSError:
            return False

    def _idle(self) -> bool:
        with self._lock:
            if self._active or time.monotonic() - self._last < self.idle_s:
                return False
        return not self.projects.busy()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(30.0)
                conn.sendall(self._answer(_read_request(conn)))
        except OSError as exc:
            log.info("a hook went away: %s", exc)
        finally:
            with self._lock:
                self._active -= 1
                self._last = time.monotonic()

    def _answer(self, raw: bytes) -> bytes:
        """``ok\\n`` + what the hook prints, or ``error\\n`` + why (hook.py's protocol)."""
        from memlane.core.errors import MemlaneError
        from memlane.hosts.claude_code.events import BadHookInput
        from memlane.hosts.claude_code.running import claude_pid

        try:
            header, _, body = raw.partition(b"\n")
            words = header.split()
            if len(words) != 2 or words[0] != b"H1" or not words[1].isdigit():
                raise BadHookInput("the request does not start with the hook's header")
            data = json.loads(body)
            if not isinstance(data, dict):
                raise BadHookInput("the hook input is not a JSON object")
            started = time.monotonic()
            output = self.events.handle(data, claude_pid(int(words[1])))
            log.info(
                "%s %s: %.0f ms",
                data.get("hook_event_name"),
                str(data.get("session_id"))[:8],
                (time.monotonic() - started) * 1000,
            )
            return b"ok\n" + (json.dumps(output).encode("utf-8") if output else b"")
        except (ValueError, BadHookInput) as exc:
            why = f"bad hook input: {exc}"
        except MemlaneError as exc:
            why = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
        except Exception as exc:
            log.exception("hook call failed")
            why = f"internal error: {exc!r}"
        return b"error\n" + why.encode("utf-8", "replace")

    def close(self) -> None:
        self.projects.close()


def _read_request(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            break
    return b"".join(chunks)


def _trim_log() -> None:
    """Start the log afresh when it grew past ``LOG_MAX_BYTES`` (stderr is the log,
    opened for appending by the hook that started this engine)."""
    try:
        if os.fstat(2).st_size > LOG_MAX_BYTES:
            os.ftruncate(2, 0)
    except OSError:
        pass


def main() -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MEMLANE_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s memlane engine[%(process)d]: %(levelname)s %(message)s",
    )
    from memlane.core.locks import lock_fd

    home = memlane_home()
    directory = engine_dir(home)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chdir(directory)  # hold no project's directory: every call names its own
    lock = os.open(os.path.join(directory, "engine.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    # An engine that is going away (its socket removed) still holds the lock
    # for a moment: wait that long, then leave the home to the one that holds it.
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            lock_fd(lock, wait=False)
            break
        except OSError:
            if time.monotonic() >= deadline:
                log.info("another engine runs for %s: exiting", home)
                return 0
            time.sleep(0.05)
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    path = socket_path(home)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
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
    daemon = Daemon(listener, configured_idle_s(), path)
    log.info("serving %s on %s (idle exit after %.0f s)", home, path, daemon.idle_s)

    def stop(signum: int, frame: object) -> None:
        if daemon.stopping.is_set():
            # Asked twice: go now. What the sessions acknowledged is in their
            # capture journals, which the next engine writes.
            log.info("signal %d again: exiting at once", signum)
            os._exit(1)
        log.info("signal %d: ending the sessions", signum)
        daemon.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        daemon.serve()
    finally:
        # No new hook call reaches a closing engine: the next one starts another.
        if daemon.reachable():
            with contextlib.suppress(OSError):
                os.unlink(path)
        listener.close()
        # Another engine may start now; this one's sessions keep their
        # journals locked while they end, so it never takes them over.
        os.close(lock)
        daemon.close()
        log.info("exited")
    return 0


if __name__ == "__main__":
    from memlane.core.process import exit_process

    exit_process(main())
