"""A big ``memory_write`` through the real ``memlane mcp``, and a search sent while it runs.

A client may write a few megabytes at once (a pasted log, a design document):
up to the 4 MiB a line may hold. The write is scanned for secrets first,
which costs about a second per megabyte of text; what matters as much is
that the client's other calls are not held behind it. Measured on a fresh
project, embeddings off (the cost is the scan, not the model), with the
engine running (as a session has it):

- ``redact``: the scan alone, in this process, on the same text;
- the write: sent, then a ``memory_search`` right behind it, and another
  each time one is answered until the write is; how long the write took,
  when the first search was answered, and the searches' latencies against
  a search on the idle server.

The text is realistic: prose bullets and Python source in fenced blocks.

    python benchmarks/bench_big_write.py [--mb 3] [--idle 5]

``PYTHONPATH=<older checkout>/src`` runs an older memlane the same way (the
server and its engine inherit it), for a before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, median, print_table, write_json

MEMLANE = str(Path(sys.executable).parent / "memlane")
QUERY = "why did we cache the invoice exporter"
CODE = (Path(__file__).parents[1] / "src" / "memlane" / "hosts" / "wire.py").read_text()


def big_text(chars: int) -> str:
    rng = random.Random(20261204)
    parts: list[str] = []
    size = 0
    while size < chars:
        for part in (entry_text(rng, 20_000), f"```python\n{CODE}\n```"):
            parts.append(part)
            size += len(part) + 1
    return "\n".join(parts)[:chars]


class Mcp:
    """``memlane mcp`` on pipes: send lines, read answers as they come."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [MEMLANE, "mcp", "-C", str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buffer = b""
        self._ids = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self._in.write(json.dumps(message).encode() + b"\n")
        self._in.flush()
        return self._ids

    def tool(self, name: str, arguments: dict[str, Any]) -> int:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def read(self, timeout_s: float = 600) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._fd], [], [], timeout_s)
            if not ready:
                raise TimeoutError("memlane mcp sent nothing")
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                raise EOFError("memlane mcp closed its output")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        self._in.close()
        self.proc.wait(60)


def measure(mb: float, idle_runs: int) -> dict[str, Any]:
    text = big_text(int(mb * 1_000_000))
    from memlane.store.redaction import redact

    redact("warm")
    started = time.perf_counter()
    redact(text)
    redact_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="memlane-bigwrite-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
        env.update(MEMLANE_HOME=str(home), MEMLANE_EMBEDDING_PROVIDER="none")
        mcp = Mcp(project, env)
        try:
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
            mcp.send("initialize", {**init, "clientInfo": {"name": "bench", "version": "0"}})
            mcp.read()
            mcp.tool("memory_write", {"text": "we cache the invoice exporter for 5 minutes"})
            mcp.read()
            idle = []
            for _ in range(idle_runs):
                began = time.perf_counter()
                mcp.tool("memory_search", {"query": QUERY})
                mcp.read()
                idle.append(time.perf_counter() - began)

            began = time.perf_counter()
            write_id = mcp.tool("memory_write", {"text": text})
            sent = {mcp.tool("memory_search", {"query": QUERY}): time.perf_counter()}
            during: list[float] = []
            first_search_s = write_s = None
            while write_s is None:
                answer = mcp.read()
                now = time.perf_counter()
                if answer["id"] == write_id:
                    assert not answer["result"].get("isError"), str(answer)[:300]
                    write_s = now - began
                    continue
                during.append(now - sent.pop(answer["id"]))
                if first_search_s is None:
                    first_search_s = now - began
                sent[mcp.tool("memory_search", {"query": QUERY})] = time.perf_counter()
            for _ in sent:  # the searches still out when the write was answered
                mcp.read()
        finally:
            mcp.close()
            subprocess.run(
                [MEMLANE, "engine", "stop"],
                env=env,
                capture_output=True,
                timeout=120,
                check=False,
            )
    return {
        "text_mb": round(len(text.encode()) / 1e6, 2),
        "redact_s": round(redact_s, 2),
        "write_s": round(write_s, 2),
        "first_search_answered_s": None if first_search_s is None else round(first_search_s, 2),
        "searches_during_write": len(during),
        "search_during_p50_ms": round(median(during) * 1000, 1) if during else None,
        "search_during_max_ms": round(max(during) * 1000, 1) if during else None,
        "search_idle_p50_ms": round(median(idle) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=3.0)
    parser.add_argument("--idle", type=int, default=5)
    args = parser.parse_args()
    row = measure(args.mb, args.idle)
    print_table("a big memory_write through memlane mcp, searches sent while it runs", [row])
    path = write_json("big_write", {"mb": args.mb, "result": row})
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
