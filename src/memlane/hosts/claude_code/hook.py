"""Claude Code's hook command: a tiny client of the warm per-user engine.

Claude Code runs it as ``<python> -I -S <this file>`` for every hook event
(docs/claude-code-engine.md). It reads the hook's JSON on stdin, hands it to
the engine (``python -m memlane.hosts.claude_code.daemon``) over a unix
socket under ``MEMLANE_HOME``, starting the engine first when none runs, and
prints the engine's answer (Claude Code's hook output JSON) on stdout.

It imports only the standard library, and little of it, since every hook
call pays for the process start: no ``json`` (its regular expressions cost
more than the rest of the call), no ``socket`` (``_socket`` is the part
needed). The engine parses the input and answers the exact bytes to print:

    request:  ``H1 <pid of the hook's parent>\n`` + the hook input, then EOF
    answer:   ``ok\n`` + the bytes to print (maybe none), or ``error\n`` + why

It always exits 0: a failing or slow call prints nothing (Claude Code goes
on without memory for that event) and appends one line to
``hook-failures.jsonl``, which ``memlane status`` counts.
``MEMLANE_NO_HOOKS=1`` makes it do nothing at all (the child ``claude -p``
that distils runs with it).

The paths below are computed the same way by the engine, which imports
them from here (one rule for both sides).
"""

from __future__ import annotations

import _socket
import os
import sys
import time

NO_HOOKS_ENV = "MEMLANE_NO_HOOKS"
HOME_ENV = "MEMLANE_HOME"
DEFAULT_HOME = "~/.memlane"
ENGINE_MODULE = "memlane.hosts.claude_code.daemon"

#: How long each event may take, engine start included, in seconds. Below
#: the ``timeout`` the installer gives each hook, so Claude Code never has
#: to kill a hook. SessionEnd allows the engine's SHUTDOWN_CAP_MS (15 s)
#: plus a margin; the engine finishes a shutdown even when this client is
#: gone, since what it flushes is journaled already.
LIMITS_S = {
    "SessionStart": 8.0,
    "UserPromptSubmit": 3.0,
    "Stop": 10.0,
    "PreCompact": 5.0,
    "SessionEnd": 17.0,
}
DEFAULT_LIMIT_S = 5.0
#: What Claude Code sets for one session's processes (seen in 2.1's hooks).
SESSION_ENV = frozenset(
    {
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_CODE_CHILD_SESSION",
        "CLAUDE_CODE_SESSION_ATTENDED",
        "CLAUDE_CODE_CHILD_NOTES_DIR",
        "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS",
        "CLAUDE_CODE_MESSAGING_SOCKET",
        "CLAUDE_CODE_MESSAGING_TOKEN",
        "CLAUDE_PID",
        "CLAUDE_ENV_FILE",
        "CLAUDE_PROJECT_DIR",
        "CLAUDE_EFFORT",
    }
)
#: Longest socket path a unix socket takes (sun_path is 108 bytes on Linux,
#: 104 on macOS), with room to spare.
SOCKET_PATH_MAX = 100
POLL_S = 0.02
#: The failures file is moved aside (``.1``) past this size: a hook that keeps
#: failing must not fill the disk.
FAILURES_MAX_BYTES = 1024 * 1024


def memlane_home() -> str:
    """``$MEMLANE_HOME`` or ``~/.memlane``, resolved (memlane.core.paths' rule)."""
    raw = os.environ.get(HOME_ENV) or DEFAULT_HOME
    return os.path.realpath(os.path.expanduser(raw))


def engine_dir(home: str) -> str:
    """Where the engine keeps its lock, log and records."""
    return os.path.join(home, "claude-code")


def socket_path(home: str) -> str:
    """The engine's socket: under the home, or, when that path would be too
    long for a unix socket, ``/tmp/memlane-<uid>/<hash of the home>.sock``."""
    path = os.path.join(engine_dir(home), "engine.sock")
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path
    import hashlib

    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    return os.path.join("/tmp", f"memlane-{os.getuid()}", f"{digest}.sock")


def failures_path(home: str) -> str:
    """One JSON line per failed or slow hook call (read by ``memlane status``)."""
    return os.path.join(engine_dir(home), "hook-failures.jsonl")


def private_dir(path: str) -> bool:
    """Whether *path* is a directory of this user that no one else may write to:
    a socket elsewhere could be another user's, listening to every prompt."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022 and (st.st_mode >> 12) == 0o04


def _connect(path: str, timeout_s: float) -> _socket.socket | None:
    if not private_dir(os.path.dirname(path)):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(max(timeout_s, 0.01))
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _spawn_engine(home: str) -> int:
    """Start the engine detached: its own session, stdio to its log, this
    environment (plus the package this file belongs to on PYTHONPATH, so the
    engine runs the same memlane as this hook). Its pid."""
    directory = engine_dir(home)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    # The engine outlives the session that starts it and serves the others:
    # none of that session's own variables (the children it runs, such as a
    # distilling ``claude -p``, must not pass for part of that session).
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ENV}
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    log = os.path.join(directory, "engine.log")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    argv = [sys.executable, "-m", ENGINE_MODULE]
    try:
        return os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
    except NotImplementedError:  # a platform without POSIX_SPAWN_SETSID
        import subprocess

        with open(log, "ab") as out:
            return subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            ).pid


def _exited(pid: int) -> bool:
    """Whether the engine this hook started has exited (it is this process's child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def _engine(home: str, deadline: float) -> _socket.socket | None:
    """A connection to the engine, starting it when none answers."""
    path = socket_path(home)
    sock = _connect(path, deadline - time.monotonic())
    if sock is not None:
        return sock
    import fcntl

    directory = engine_dir(home)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if not private_dir(os.path.dirname(path)):
        raise PermissionError(f"{os.path.dirname(path)} is not a private directory of this user")
    # One starter at a time: the others wait here, then find it running.
    fd = os.open(os.path.join(directory, "spawn.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(POLL_S)
        sock = _connect(path, deadline - time.monotonic())
        if sock is not None:
            return sock
        pid = _spawn_engine(home)
        while time.monotonic() < deadline:
            time.sleep(POLL_S)
            sock = _connect(path, deadline - time.monotonic())
            if sock is not None:
                return sock
            if _exited(pid):
                # Waiting out the limit would only make the failure look slow.
                log = os.path.join(directory, "engine.log")
                raise RuntimeError(f"the engine exited at start: see {log}")
        return None
    finally:
        os.close(fd)


class EngineGone(RuntimeError):
    """The engine closed the connection without an answer (it was exiting, say)."""


def _ask(home: str, request: bytes, deadline: float) -> bytes:
    """The engine's answer: the bytes to print, asking a second time when the
    engine went away with the call (one exiting may still accept it). Asking
    again is safe: the engine ignores a Stop of a turn it has."""
    try:
        return _ask_once(home, request, deadline)
    except (EngineGone, ConnectionResetError, BrokenPipeError):
        if time.monotonic() >= deadline:
            raise
    return _ask_once(home, request, deadline)


def _ask_once(home: str, request: bytes, deadline: float) -> bytes:
    sock = _engine(home, deadline)
    if sock is None:
        raise TimeoutError("no engine answered in time")
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    status, _, body = b"".join(chunks).partition(b"\n")
    if status == b"ok":
        return body
    if status == b"error":
        raise RuntimeError(body.decode("utf-8", "replace"))
    raise EngineGone("the engine closed the connection without an answer")


def field(raw: bytes, key: bytes) -> bytes | None:
    """The raw value of top-level-looking *key* in the JSON *raw*, without parsing it
    (a string's content, or a literal such as ``true``); None when absent. Only for
    choosing a time limit and the Stop guard: the engine parses the input properly."""
    needle = b'"' + key + b'"'
    at = raw.find(needle)
    while at >= 0:
        rest = raw[at + len(needle) :].lstrip()
        escaped = at > 0 and raw[at - 1 : at] == b"\\"  # a quote inside a string
        at = raw.find(needle, at + 1)
        if escaped or rest[:1] != b":":
            continue  # not a key
        rest = rest[1:].lstrip()
        if rest[:1] == b'"':
            end = rest.find(b'"', 1)
            return rest[1:end] if end > 0 else None
        ends = [i for i in (rest.find(c) for c in (b",", b"}", b" ", b"\n")) if i >= 0]
        return rest[: min(ends)] if ends else rest
    return None


def _record_failure(home: str, event: str, what: str, detail: str, took_s: float) -> None:
    import json

    try:
        os.makedirs(engine_dir(home), mode=0o700, exist_ok=True)
        line = {
            "event": event,
            "what": what,
            "detail": detail[:300],
            "took_ms": round(took_s * 1000),
        }
        path = failures_path(home)
        if os.path.exists(path) and os.path.getsize(path) > FAILURES_MAX_BYTES:
            os.replace(path, path + ".1")  # the older failures stay one file back
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    except OSError:
        pass  # nowhere to record it: still never fail the session


def main() -> int:
    if os.environ.get(NO_HOOKS_ENV) == "1":
        return 0
    started = time.monotonic()
    home = memlane_home()
    event = "unknown"
    try:
        raw = sys.stdin.buffer.read()
        event = (field(raw, b"hook_event_name") or b"unknown").decode("utf-8", "replace")
        if event == "Stop" and field(raw, b"stop_hook_active") == b"true":
            return 0  # Claude goes on because a Stop hook asked it to: the turn is not over
        deadline = started + LIMITS_S.get(event, DEFAULT_LIMIT_S)
        header = b"H1 %d\n" % os.getppid()
        output = _ask(home, header + raw, deadline)
        if output:
            sys.stdout.buffer.write(output)
            sys.stdout.buffer.flush()
    except TimeoutError as exc:
        _record_failure(home, event, "slow", str(exc) or "timed out", time.monotonic() - started)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        _record_failure(home, event, "failed", detail, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
