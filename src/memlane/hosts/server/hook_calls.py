"""One Claude Code hook call on the engine's socket (the ``H1 <pid>`` protocol).

hosts/claude_code/hook.py sends ``H1 <its parent's pid>``, then the hook
input Claude Code gave it, and half-closes; the engine answers ``ok\\n`` and
the bytes the hook prints, or ``error\\n`` and why (the hook then prints
nothing and says why on stderr). What the answer's work leaves for later (a
new session's catch-up index, recovery and warm worker) runs only once the
answer is sent: Claude Code is waiting for it, on the same cores.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

    from memlane.hosts.claude_code.events import Events

log = logging.getLogger("memlane.engine")

#: Largest hook input accepted (a prompt with a pasted log is large; more is refused).
MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: How long a hook call's connection may take to arrive whole.
HOOK_READ_TIMEOUT_S = 30.0


def serve_hook_call(conn: socket.socket, reader: Any, header_rest: bytes, events: Events) -> None:
    """Read the hook input, send the answer, then run what waited for it."""
    conn.settimeout(HOOK_READ_TIMEOUT_S)
    body = reader.read(MAX_REQUEST_BYTES + 1)
    after_answer: list[Callable[[], object]] = []
    try:
        conn.sendall(answer_hook(events, header_rest, body, after_answer))
    finally:
        for step in after_answer:
            try:
                step()
            except Exception:  # the answer is out: log, never raise
                log.exception("work after a hook's answer failed")


def answer_hook(
    events: Events, header_rest: bytes, body: bytes, after_answer: list[Callable[[], object]]
) -> bytes:
    """``ok\\n`` + what the hook prints, or ``error\\n`` + why; what is to run
    once it is sent goes to *after_answer*."""
    from memlane.core.errors import MemlaneError
    from memlane.hosts.claude_code.events import BadHookInput
    from memlane.hosts.claude_code.running import claude_pid

    try:
        if not header_rest.isdigit():
            raise BadHookInput("the request does not start with the hook's header")
        if len(body) > MAX_REQUEST_BYTES:
            raise BadHookInput(f"the hook input is larger than {MAX_REQUEST_BYTES} bytes")
        data = json.loads(body)
        if not isinstance(data, dict):
            raise BadHookInput("the hook input is not a JSON object")
        started = time.monotonic()
        output = events.handle(data, claude_pid(int(header_rest)), after_answer)
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
