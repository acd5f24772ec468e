"""How a thin client finds, starts and reaches the warm engine (standard library only).

Every host is a thin client of one engine process per user (docs/architecture.md,
"The warm engine"): Claude Code's hook command, ``memlane mcp``, the bridge
``memlane sidecar`` that pi starts, and the CLI. They all find the engine
with the rules below, so this module imports nothing but the standard
library and nothing of memlane: the hook command runs it with ``python -I -S``
and pays for every import on every prompt.

One engine serves one ``MEMLANE_HOME`` *and* one setting of the variables
memlane reads (``MEMLANE_*``, ``MEMSEARCH_*``, ``PI_MEMSEARCH_*``, where pi and
Claude Code keep their transcripts): a client whose variables differ (a
terminal with ``MEMLANE_AUTO_CONTEXT=off``, another checkout of memlane) is
served by an engine of its own, so what a call does never depends on which
client started the engine. The engine's key is a hash of those variables and
of where this memlane is installed.

Files, under ``$MEMLANE_HOME/engine/`` (a directory only this user may enter):

    <key>.lock    held by the running engine (``flock``; its pid inside)
    <key>.sock    its unix socket (0600)
    <key>.where   the socket's path instead, when ``<key>.sock`` would be too long
                  for a unix socket: a private directory ``mkdtemp`` made in /tmp
    <key>.json    what ``memlane engine status`` shows (pid, start, socket, version)
    <key>.log     the engine's log
    spawn.lock    one client starts an engine at a time
    client-failures.jsonl  a client that failed open says so here (``memlane status``)

A socket is only used in a directory owned by this user that no one else may
write to, and the directories are never at a name another user could create
first: a socket elsewhere could be another user's, reading every prompt.
"""

from __future__ import annotations

import _socket
import os
import sys
import time

from memlane.core.jsonlite import dumps

# ``typing`` costs a hook call milliseconds: types are for the checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import hashlib
    from collections.abc import Callable

HOME_ENV = "MEMLANE_HOME"
DEFAULT_HOME = "~/.memlane"
#: ``python -m`` this to run the engine.
ENGINE_MODULE = "memlane.hosts.server"
#: Variables that make a different engine: memlane reads them.
KEYED_PREFIXES = ("MEMLANE_", "MEMSEARCH_", "PI_MEMSEARCH_")
KEYED_NAMES = frozenset({"HOME", "PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME"})
#: ... except these: the home is the engine's directory already; the others
#: are read by a client, never by the engine.
UNKEYED_NAMES = frozenset(
    {
        HOME_ENV,
        "MEMLANE_NO_HOOKS",
        "MEMLANE_LOG_LEVEL",
        "MEMLANE_COMMAND",
        "MEMLANE_PI_DEBUG",
        "MEMLANE_PI_TIMINGS",
        "MEMLANE_OPENCODE_DEBUG",
        "MEMLANE_OPENCODE_TIMINGS",
        "MEMLANE_ENGINE",
    }
)
#: What an agent sets for one session's processes (seen in Claude Code 2.1's
#: hooks and MCP servers). The engine outlives the session that starts it and
#: serves the others, so it starts without them.
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
#: ``MEMLANE_ENGINE=off``: every client works in its own process, as before
#: the engine (for debugging, or a machine where a background process is unwelcome).
ENGINE_SWITCH_ENV = "MEMLANE_ENGINE"
#: Longest socket path bound here (sun_path is 108 bytes on Linux, 104 on
#: macOS), with room to spare.
SOCKET_PATH_MAX = 100
POLL_S = 0.02
#: The failures file is moved aside (``.1``) past this size: a client that
#: keeps failing must not fill the disk.
FAILURES_MAX_BYTES = 1024 * 1024
#: A header line of the socket protocol: a hook call, or a JSON-RPC connection.
HOOK_HEADER = b"H1"
#: A Codex CLI hook call (hosts/codex/): the same protocol, Codex's events.
CODEX_HOOK_HEADER = b"C1"
RPC_HEADER = b"J1"


class EngineUnavailable(RuntimeError):
    """No engine could be reached; the message says why."""


class EngineSlow(EngineUnavailable):
    """No engine answered before the client's deadline."""


def memlane_home() -> str:
    """``$MEMLANE_HOME`` or ``~/.memlane``, resolved (memlane.core.paths' rule)."""
    raw = os.environ.get(HOME_ENV) or DEFAULT_HOME
    return os.path.realpath(os.path.expanduser(raw))


def engine_disabled() -> bool:
    return os.environ.get(ENGINE_SWITCH_ENV, "").strip().lower() in {"off", "0", "false", "no"}


def engine_dir(home: str) -> str:
    return os.path.join(home, "engine")


def package_dir() -> str:
    """The memlane package this file belongs to (an engine runs the same code)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def keyed_environment(env: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The variables that key an engine, from *env* (default: this process's)."""
    source = os.environ if env is None else env
    return {
        name: value
        for name, value in source.items()
        if (name.startswith(KEYED_PREFIXES) or name in KEYED_NAMES) and name not in UNKEYED_NAMES
    }


def engine_key(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """12 hex characters naming the engine for this installation and *env*."""
    parts = [package_dir()] + [f"{k}={v}" for k, v in sorted(keyed_environment(env).items())]
    return _sha256_hex("\0".join(parts).encode("utf-8", "surrogateescape"))[:12]


def _sha256_hex(data: bytes) -> str:
    """SHA-256 from the interpreter's built-in module: ``hashlib`` loads OpenSSL,
    a few milliseconds every hook call pays for."""
    sha256: Callable[[bytes], hashlib._Hash]
    try:
        from _sha2 import sha256  # type: ignore[import-not-found, no-redef]  # 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found, no-redef]
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


class Place:
    """Where one engine's files are."""

    def __init__(self, home: str | None = None, key: str | None = None) -> None:
        self.home = home or memlane_home()
        self.key = key or engine_key()
        self.directory = engine_dir(self.home)

    def file(self, suffix: str) -> str:
        return os.path.join(self.directory, f"{self.key}{suffix}")

    @property
    def lock(self) -> str:
        return self.file(".lock")

    @property
    def log(self) -> str:
        return self.file(".log")

    @property
    def info(self) -> str:
        return self.file(".json")

    @property
    def pointer(self) -> str:
        return self.file(".where")

    @property
    def spawn_lock(self) -> str:
        return os.path.join(self.directory, "spawn.lock")

    @property
    def failures(self) -> str:
        return os.path.join(self.directory, "client-failures.jsonl")

    def preferred_socket(self) -> str:
        return self.file(".sock")

    def socket_path(self) -> str | None:
        """The socket to connect to: ``<key>.sock``, or the one ``<key>.where`` names
        (None when the path is too long and no engine published one)."""
        path = self.preferred_socket()
        if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
            return path
        try:
            with open(self.pointer, encoding="utf-8") as handle:
                published = handle.read().strip()
        except OSError:
            return None
        return published or None


def private_dir(path: str) -> bool:
    """Whether *path* is a directory (not a link to one) of this user that no one
    else may write to."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022 and (st.st_mode >> 12) == 0o04


def make_private_dir(path: str) -> None:
    """Create *path* (and its parents) for this user only; refuse one another user
    could write to (``EngineUnavailable`` says what to do)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not private_dir(path):
        raise EngineUnavailable(
            f"{path} is not a private directory of this user (another user may write to it): "
            f"memlane will not use a socket there; remove it, or set {HOME_ENV} elsewhere"
        )


def connect(place: Place, timeout_s: float) -> _socket.socket | None:
    """A connection to the running engine, or None when none answers."""
    path = place.socket_path()
    if path is None or not private_dir(os.path.dirname(path)):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(max(timeout_s, 0.01))
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def engine_environment() -> dict[str, str]:
    """This process's environment for an engine it starts: no session's own
    variables, and this memlane first on the module path."""
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ENV}
    root = os.path.dirname(package_dir())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def spawn(place: Place, python: str | None = None) -> int:
    """Start the engine detached (its own session, stdio to its log); its pid."""
    make_private_dir(place.directory)
    exe = python or sys.executable
    argv = [exe, "-m", ENGINE_MODULE]
    env = engine_environment()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    try:
        return os.posix_spawn(exe, argv, env, file_actions=actions, setsid=True, setsigmask=set())
    except NotImplementedError:  # a platform without POSIX_SPAWN_SETSID
        import subprocess

        with open(place.log, "ab") as out:
            return subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            ).pid


#: Engines this process started (``reach``), until ``reap_started`` saw them exit.
_started: list[int] = []


def reap_started() -> None:
    """Reap the engines this process started that have exited since: a client that
    lives on (``memlane mcp``, the pi bridge) leaves no zombie behind an engine
    that was stopped."""
    for pid in list(_started):
        if _exited(pid):
            _started.remove(pid)


def _exited(pid: int) -> bool:
    """Whether the engine this process started has exited (it is our child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def reach(place: Place, deadline: float, *, start: bool = True) -> _socket.socket:
    """A connection to the engine, starting it first when none answers and
    *start* (``EngineUnavailable`` past *deadline* or when it cannot run)."""
    if engine_disabled():
        raise EngineUnavailable(f"the engine is off ({ENGINE_SWITCH_ENV}=off)")
    sock = connect(place, deadline - time.monotonic())
    if sock is not None:
        return sock
    if not start:
        raise EngineUnavailable("no engine is running")
    import fcntl

    make_private_dir(place.directory)
    # One starter at a time: the others wait here, then find it running.
    fd = os.open(place.spawn_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise EngineSlow("another client is still starting the engine") from None
                time.sleep(POLL_S)
        sock = connect(place, deadline - time.monotonic())
        if sock is not None:
            return sock
        pid = spawn(place)
        _started.append(pid)
        while time.monotonic() < deadline:
            time.sleep(POLL_S)
            sock = connect(place, deadline - time.monotonic())
            if sock is not None:
                return sock
            if _exited(pid):
                # Waiting out the deadline would only make the failure look slow.
                raise EngineUnavailable(f"the engine exited at start: see {place.log}")
        raise EngineSlow("the engine did not start in time")
    finally:
        os.close(fd)


def rpc_header(client: str, cwd: str, **meta: object) -> bytes:
    """The first line of a JSON-RPC connection: who is calling, from where."""
    fields = {"client": client, "cwd": cwd, "pid": os.getppid(), **meta}
    return RPC_HEADER + b" " + dumps(fields).encode("ascii") + b"\n"


def record_failure(
    place: Place, client: str, event: str, what: str, detail: str, took_s: float
) -> None:
    """One line in ``client-failures.jsonl``: a client failed open (``what``:
    ``failed`` or ``slow``; the time of the last one is the file's). Never
    raises: the client must go on."""

    try:
        make_private_dir(place.directory)
        line = {
            "client": client,
            "event": event,
            "what": what,
            "detail": detail[:300],
            "took_ms": round(took_s * 1000),
        }
        path = place.failures
        if os.path.exists(path) and os.path.getsize(path) > FAILURES_MAX_BYTES:
            os.replace(path, path + ".1")  # the older failures stay one file back
        with open(path, "a", encoding="utf-8") as out:
            out.write(dumps(line) + "\n")
    except (OSError, EngineUnavailable):
        pass  # nowhere to record it: still never fail the host
