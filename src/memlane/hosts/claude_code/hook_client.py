"""Claude Code's hook command: a tiny client of the warm per-user engine.

Claude Code runs it as ``<python> -I -S hosts/claude_code/hook.py`` for every
hook event (docs/claude-code-engine.md); that file only puts the package on
the path and calls ``main`` here (Python compiles a script it runs anew each
time, a module it imports once, into its ``.pyc``). It reads the hook's JSON on stdin, hands it to
the warm engine (hosts/server/) over its unix socket, starting the engine
first when none runs (core/link.py: where it is, how it starts), and
prints the engine's answer (Claude Code's hook output JSON) on stdout.

It imports only the standard library and core/link.py, and little of it,
since every hook call pays for the process start: no ``json`` (its regular
expressions cost more than the rest of the call), no ``socket`` (``_socket``
is the part needed). The engine parses the input and answers the exact bytes
to print:

    request:  ``H1 <pid of the hook's parent>\n`` + the hook input, then EOF
    answer:   ``ok\n`` + the bytes to print (maybe none), or ``error\n`` + why

It always exits 0: a failing or slow call prints nothing (Claude Code goes
on without memory for that event) and appends one line to the engine's
``client-failures.jsonl``, which ``memlane status`` counts.
``MEMLANE_NO_HOOKS=1`` makes it do nothing at all (the child ``claude -p``
that distils runs with it).
"""

from __future__ import annotations

import _socket
import os
import sys
import time

from memlane.core import link

NO_HOOKS_ENV = "MEMLANE_NO_HOOKS"
CLIENT = "claude-code hook"

#: How long each event may take, engine start included, in seconds. Below
#: the ``timeout`` the installer gives each hook, so Claude Code never has
#: to kill a hook. memlane installs no SessionEnd hook (docs/adr/0026); one
#: from an older install only hands the session to the engine, which ends it
#: on its own threads (what it flushes is in the capture log already): Claude Code 2.1
#: gives a plugin's SessionEnd hooks 1.5 s at exit whatever their ``timeout``
#: says (``CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS``) and cancels them past
#: it ("Hook cancelled"), so this one stays well below.
LIMITS_S = {
    "SessionStart": 8.0,
    "UserPromptSubmit": 3.0,
    "Stop": 10.0,
    "PreCompact": 5.0,
    "SessionEnd": 1.0,
}
DEFAULT_LIMIT_S = 5.0
#: Events that never start an engine: with none running there is no session
#: to end (its captures are in the capture log, which the next session of
#: the project writes), and starting one takes longer than Claude Code waits.
NO_START = frozenset({"SessionEnd"})


class EngineGone(RuntimeError):
    """The engine closed the connection without an answer (it was exiting, say)."""


def _ask(place: link.Place, request: bytes, deadline: float, *, start: bool = True) -> bytes:
    """The engine's answer: the bytes to print, asking a second time when the
    engine went away with the call (one exiting may still accept it). Asking
    again is safe: the engine ignores a Stop of a turn it has. *start*: start
    an engine when none runs."""
    try:
        return _ask_once(place, request, deadline, start)
    except (EngineGone, ConnectionResetError, BrokenPipeError):
        if time.monotonic() >= deadline:
            raise
    return _ask_once(place, request, deadline, start)


def _ask_once(place: link.Place, request: bytes, deadline: float, start: bool) -> bytes:
    sock = link.reach(place, deadline, start=start)
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


def answer(
    raw: bytes,
    header_kind: bytes = link.HOOK_HEADER,
    client: str = CLIENT,
    parent: int | None = None,
    place: link.Place | None = None,
) -> bytes:
    """What the host gets for the hook input *raw*: the engine's answer, or nothing when
    the call fails or is slow (recorded in ``client-failures.jsonl``). Never raises.

    *parent*: the pid of the host process the hook belongs to (the session ends when it
    is gone); the caller's parent by default. Codex's hooks reach this through ``memlane
    mcp`` (hosts/mcp/thin.py) rather than a process of their own, which passes the
    *place* it found once (finding it resolves paths: a millisecond a call).
    """
    if os.environ.get(NO_HOOKS_ENV) == "1":
        return b""
    started = time.monotonic()
    place = place or link.Place()
    event = (field(raw, b"hook_event_name") or b"unknown").decode("utf-8", "replace")
    try:
        if event == "Stop" and field(raw, b"stop_hook_active") == b"true":
            return b""  # the host goes on because a Stop hook asked it to: the turn is not over
        deadline = started + LIMITS_S.get(event, DEFAULT_LIMIT_S)
        header = header_kind + b" %d\n" % (os.getppid() if parent is None else parent)
        try:
            return _ask(place, header + raw, deadline, start=event not in NO_START)
        except link.EngineUnavailable as exc:
            if event in NO_START and not isinstance(exc, link.EngineSlow):
                return b""  # no engine, so no session of it to end
            raise
    except (TimeoutError, link.EngineSlow) as exc:
        took = time.monotonic() - started
        link.record_failure(place, client, event, "slow", str(exc) or "timed out", took)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        link.record_failure(place, client, event, "failed", detail, time.monotonic() - started)
    return b""


def main() -> int:
    """One Claude Code hook call: its input on stdin, the engine's answer on stdout."""
    if os.environ.get(NO_HOOKS_ENV) == "1":
        return 0
    try:
        raw = sys.stdin.buffer.read()
    except OSError as exc:
        link.record_failure(link.Place(), CLIENT, "unknown", "failed", f"stdin: {exc}", 0.0)
        return 0
    output = answer(raw)
    if output:
        sys.stdout.buffer.write(output)
        sys.stdout.buffer.flush()
    return 0
