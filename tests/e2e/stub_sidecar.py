#!/usr/bin/env python3
"""A throwaway stand-in for ``memlane sidecar`` (DESIGN §9) used to develop the pi
extension before the real sidecar landed; not used by the tests. Logs every request
to $STUB_SIDECAR_LOG (one JSON object a line)."""

import json
import os
import sys

log = open(os.environ.get("STUB_SIDECAR_LOG", os.devnull), "a")
next_id = 1000


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def call_host(method, params):
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == next_id and "method" not in msg:
            return msg
    return None


print("stub sidecar started", sys.argv, file=sys.stderr, flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    log.write(json.dumps(msg) + "\n")
    log.flush()
    method, params, rid = msg.get("method"), msg.get("params", {}), msg.get("id")
    if method == "session_start":
        result = {"snapshot": "STUB-SNAPSHOT", "notices": ["stub notice"]}
    elif method == "before_agent_start":
        result = {"system_append": "STUB-SNAPSHOT", "message": {"content": "STUB-HIDDEN " + params.get("prompt", "")}}
    elif method == "agent_settled":
        answer = call_host("llm.complete", {"system": "distil", "prompt": json.dumps(params)})
        log.write(json.dumps({"llm": answer}) + "\n")
        log.flush()
        result = {"queued": True}
    elif method == "tool":
        result = {"text": "STUB-TOOL " + json.dumps(params), "details": {"ok": True}}
    elif method == "session_shutdown":
        result = {"flushed": True, "pending": 0}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": rid, "result": result})
