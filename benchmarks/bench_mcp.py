"""``memlane mcp`` from spawn to its answers: the handshake, then the first tool call.

An MCP client (Claude Code, Cursor, Codex) starts ``memlane mcp`` with each
session and lists its tools before the first turn: a server slow to answer
is left out, with its tools. Measured from spawning the ``memlane`` script
(what the clients run) on the demo project (a few weeks of memory, indexed):

- handshake: ``initialize`` answered, then ``notifications/initialized`` and
  ``tools/list`` sent and answered, the way a client does it; interleaved
  with ``python -c pass`` on the same interpreter (the floor of any Python
  process) and reported as its ratio; with the engine running (the steady
  state), and with none (each run starts one in the background);
- first call: the handshake, then a ``memory_search`` answered, with a warm
  engine and with none running (the server starts it, the engine opens the
  project and loads the model).

Beside the wall times, the CPU time of each process over its whole life
(start to exit) for the warm handshakes: on a busy machine it moves much
less than the wall time, and shows what the process costs on an idle one.

``--compare MEMLANE`` measures another ``memlane`` executable the same way
in the same runs (an older version, for a before and after).

    python benchmarks/bench_mcp.py [--runs 40] [--cold 10] [--calls 10] [--compare MEMLANE]

Target: handshake p95 <= 150 ms on an idle machine, <= 5x ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import as_installed, median, percentile, print_table, write_json
from bench_sidecar import prepare

MEMLANE = str(Path(sys.executable).parent / "memlane")
QUERY = "why did we cache the invoice exporter"


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


INITIALIZE = _line(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
)
LIST = _line({"jsonrpc": "2.0", "method": "notifications/initialized"}) + _line(
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
)
SEARCH = _line(
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": QUERY}},
    }
)


def _answer(out: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = out.readline()
        if not line:
            raise RuntimeError(f"memlane mcp exited before answering request {request_id}")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message


CPU: dict[str, list[float]] = {}  # what -> CPU ms of each process (its whole life)


def _children_cpu_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def session(memlane: str, project: Path, env: dict[str, str], *, search: bool) -> float:
    """One client session: spawn, handshake (and a search); ms until the last answer.
    The process's CPU time (start to exit) goes to ``CPU[memlane]``."""
    cpu = _children_cpu_ms()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [memlane, "mcp", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        _answer(proc.stdout, 1)
        proc.stdin.write(LIST)
        proc.stdin.flush()
        listed = _answer(proc.stdout, 2)
        assert listed["result"]["tools"], listed
        if search:
            proc.stdin.write(SEARCH)
            proc.stdin.flush()
            found = _answer(proc.stdout, 3)
            assert not found["result"].get("isError"), found
        took = (time.perf_counter() - started) * 1000
    finally:
        proc.stdin.close()
        proc.wait(120)
        proc.stdout.close()
    if not search:
        CPU.setdefault(memlane, []).append(_children_cpu_ms() - cpu)
    return took


def bare_python() -> float:
    cpu = _children_cpu_ms()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    took = (time.perf_counter() - started) * 1000
    CPU.setdefault("python", []).append(_children_cpu_ms() - cpu)
    return took


def engine(memlane: str, env: dict[str, str], action: str) -> None:
    subprocess.run(
        [memlane, "engine", action], env=env, capture_output=True, check=False, timeout=120
    )


def row(
    what: str, walls: list[float], floor: list[float] | None, cpu: list[float] | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "what": what,
        "runs": len(walls),
        "p50_ms": median(walls),
        "p95_ms": percentile(walls, 95),
    }
    if cpu:
        found["cpu_p50_ms"] = median(cpu)
    if floor:
        found["x_python_p50"] = median(walls) / median(floor)
        found["x_python_p95"] = percentile(walls, 95) / percentile(floor, 95)
    return found


def measure(
    executables: dict[str, str], project: Path, env: dict[str, str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    floor: list[float] = []
    warm: dict[str, list[float]] = {name: [] for name in executables}
    for memlane in executables.values():
        engine(memlane, env, "start")
        session(memlane, project, env, search=True)  # the project open, the model loaded
    CPU.clear()
    for _ in range(args.runs):  # interleaved: every kind sees the same load
        floor.append(bare_python())
        for name, memlane in executables.items():
            warm[name].append(session(memlane, project, env, search=False))
    rows.append(row("python -c pass", floor, None, CPU["python"]))
    for name, memlane in executables.items():
        rows.append(row(f"{name}: handshake, engine running", warm[name], floor, CPU[memlane]))

    cold: dict[str, list[float]] = {name: [] for name in executables}
    cold_floor: list[float] = []
    for _ in range(args.cold):
        for name, memlane in executables.items():
            engine(memlane, env, "stop")
            cold_floor.append(bare_python())
            cold[name].append(session(memlane, project, env, search=False))
            time.sleep(args.settle)  # the engine it started comes up before the next stop
    for name in executables:
        rows.append(row(f"{name}: handshake, no engine (starts one)", cold[name], cold_floor))

    for name, memlane in executables.items():
        engine(memlane, env, "start")
        session(memlane, project, env, search=True)
        calls = [session(memlane, project, env, search=True) for _ in range(args.calls)]
        rows.append(row(f"{name}: first search answered, warm engine", calls, None))
        cold_calls = []
        for _ in range(max(1, args.calls // 2)):
            engine(memlane, env, "stop")
            cold_calls.append(session(memlane, project, env, search=True))
        rows.append(row(f"{name}: first search answered, no engine", cold_calls, None))
        engine(memlane, env, "stop")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="warm handshakes (>= 30)")
    parser.add_argument("--cold", type=int, default=10, help="handshakes with no engine")
    parser.add_argument("--calls", type=int, default=10, help="first searches, warm engine")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after a cold run")
    parser.add_argument("--compare", metavar="MEMLANE", help="another memlane to measure")
    args = parser.parse_args()
    executables = {"memlane mcp": MEMLANE}
    if args.compare:
        executables["compared"] = args.compare
    as_installed()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memlane-bench-mcp-") as tmp:
        home = Path(tmp) / "home"
        os.environ["MEMLANE_HOME"] = str(home)
        project = prepare(Path(tmp))
        env = {**os.environ, "MEMLANE_HOME": str(home), "MEMLANE_LLM_PROVIDER": "none"}
        try:
            rows = measure(executables, project, env, args)
        finally:
            for memlane in executables.values():
                engine(memlane, env, "stop")
    load = (load_before, os.getloadavg()[0])
    title = f"memlane mcp from spawn (load {load[0]:.1f} before, {load[1]:.1f} after)"
    print_table(
        title,
        [
            {
                "what": r["what"],
                "runs": r["runs"],
                "p50 ms": r["p50_ms"],
                "p95 ms": r["p95_ms"],
                "x python p50": r.get("x_python_p50", ""),
                "x python p95": r.get("x_python_p95", ""),
                "CPU p50 ms": r.get("cpu_p50_ms", ""),
            }
            for r in rows
        ],
    )
    result = {"load": load, "compare": args.compare, "rows": rows}
    print(f"\nJSON: {write_json('mcp', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
