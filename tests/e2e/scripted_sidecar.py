#!/usr/bin/env python3
"""A misbehaving stand-in for ``memlane sidecar``, to test the pi extension's JSON-RPC client.

Run by the extension through ``MEMLANE_COMMAND``. ``SCRIPTED_SIDECAR_LOG``
receives one JSON line per request (with this process's pid);
``SCRIPTED_SIDECAR_MODE`` picks the misbehaviour:

``hang_on_eof``   ignores stdin EOF and SIGTERM (the host must kill it)
``tool_error``    answers every ``tool`` call with a JSON-RPC error
``chatty``        before answering ``before_agent_start``: writes a non-JSON
                  line, then asks the host ``llm.complete`` and puts the
                  answer into ``system_append``
``mute``          never answers ``before_agent_start``
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

MODE = os.environ.get("SCRIPTED_SIDECAR_MODE", "")
LOG = os.environ.get("SCRIPTED_SIDECAR_LOG", os.devnull)


def log(record: dict[str, object]) -> None:
    with open(LOG, "a") as handle:
        handle.write(json.dumps({"pid": os.getpid(), **record}) + "\n")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask_host(method: str, params: dict[str, object]) -> dict[str, object]:
    send({"jsonrpc": "2.0", "id": "host-1", "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == "host-1":
            return message
    return {}


def main() -> None:
    if MODE == "hang_on_eof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        request = json.loads(line)
        method, params, rid = request.get("method"), request.get("params") or {}, request.get("id")
        log({"method": method, "params": params})
        result: dict[str, object]
        if method == "session_start":
            result = {"snapshot": "", "notices": []}
        elif method == "before_agent_start":
            if MODE == "mute":
                continue
            append = "SCRIPTED-SNAPSHOT"
            if MODE == "chatty":
                sys.stdout.write("this line is not JSON\n")
                sys.stdout.flush()
                answer = ask_host("llm.complete", {"system": "s", "prompt": "say hi"})
                log({"llm_answer": answer})
                append += " " + str((answer.get("result") or {}).get("text", "NO-ANSWER"))
            result = {"system_append": append, "message": None}
        elif method == "tool":
            if MODE == "tool_error":
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32000, "message": "no chunk with hash deadbeefdeadbeef"},
                    }
                )
                continue
            result = {"text": "scripted tool result", "details": {}}
        elif method == "agent_settled":
            result = {"queued": False, "reason": "scripted"}
        elif method == "session_shutdown":
            result = {"flushed": True, "pending": 0}
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    if MODE == "hang_on_eof":
        log({"eof": True})
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
