"""The pi sidecar as a host sees it: cold start, memory, prompt wait.

Spawns ``memlane sidecar`` (a real subprocess over stdio JSON-RPC) on a
throwaway project holding a few weeks of memory (the demo fixtures, indexed
first), and measures:

- cold start: from spawning the process to the answer to ``session_start``
  (what pi waits for at session start; the model warms in the background);
- ``before_agent_start`` wall time seen by the host, p50/p95 over 50
  prompts, with auto-context on (after the warm-up) and off;
- the sidecar's RSS after the prompts (steady) and its peak (VmHWM).

    python benchmarks/bench_sidecar.py [--prompts 50]

Targets: steady RSS <= 300 MB; auto-context p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile, print_table, write_json

PROMPTS = [
    "why did we move the session cache to redis?",
    "what was decided about the retry queue backoff",
    "remind me how the deploy to staging works",
    "which flaky test did we fix last week and how",
    "what port does the api listen on",
    "continue the migration of the billing tables",
    "how do we rotate the signing keys",
    "what did the user prefer for test fixtures",
]


class Host:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.next_id = 1

    def call(self, method: str, params: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request_id = self.next_id
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("method") == "llm.complete":  # not expected here: no captures
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"text": "- x"}}
                self.proc.stdin.write(json.dumps(reply).encode() + b"\n")
                self.proc.stdin.flush()
                continue
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]


def rss_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def prepare(root: Path) -> Path:
    """A project with the demo's weeks of memory, already indexed."""
    from memlane.cli.demo import build_project  # the demo's own store

    project = build_project(root)
    subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "-C", str(project), "index"],
        check=True,
        capture_output=True,
    )
    return project


def _counters(host: Host) -> dict[str, int]:
    status = host.call("tool", {"name": "memory_status", "arguments": {}})
    counters: dict[str, int] = status["details"]["session"]["auto_context"]
    return counters


def _searched(host: Host) -> int:
    c = _counters(host)
    return c["injected"] + c["skippedEmpty"] + c["skippedBudget"] + c["skippedError"]


def measure(project: Path, auto_context: bool, prompts: int) -> dict[str, Any]:
    env = {**os.environ, "MEMLANE_AUTO_CONTEXT": "on" if auto_context else "off"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli.main", "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    host = Host(proc)
    host.call(
        "session_start",
        {"cwd": str(project), "session_id": "bench", "transcript_path": None, "host": "bench"},
    )
    cold_s = time.perf_counter() - t0
    searched_before = 0
    lexical_before = 0
    first_ms: float | None = None
    if auto_context:
        # The first prompts are answered from the lexical leg while the model
        # loads (``pi -p`` gets only those); then wait out the warm-up: the
        # table measures the warm worker.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            t = time.perf_counter()
            host.call("before_agent_start", {"prompt": PROMPTS[0]})
            if first_ms is None:
                first_ms = (time.perf_counter() - t) * 1000
            lexical_before = _counters(host)["lexicalWhileWarming"]
            searched_before = _searched(host)
            if searched_before > lexical_before:
                break
            time.sleep(0.2)
    walls = []
    for i in range(prompts):
        t = time.perf_counter()
        host.call("before_agent_start", {"prompt": PROMPTS[i % len(PROMPTS)] + f" ({i})"})
        walls.append((time.perf_counter() - t) * 1000)
    steady, peak = rss_mb(proc.pid)
    counters = _counters(host)
    host.call("session_shutdown", {})
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(30)
    return {
        "auto_context": auto_context,
        "cold_start_s": cold_s,
        "prompt_p50_ms": percentile(walls, 50),
        "prompt_p95_ms": percentile(walls, 95),
        "rss_steady_mb": steady,
        "rss_peak_mb": peak,
        "injected": counters["injected"],
        "skippedBudget": counters["skippedBudget"],
        "searched_during_warm_up": searched_before,
        "lexical_during_warm_up": lexical_before,
        "first_prompt_ms": first_ms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-sidecar-") as tmp:
        os.environ["MEMLANE_HOME"] = str(Path(tmp) / "home")
        project = prepare(Path(tmp))
        rows = [measure(project, False, args.prompts), measure(project, True, args.prompts)]
    print_table(
        "memlane sidecar (stdio JSON-RPC, bundled model)",
        [
            {
                "auto-context": "on" if r["auto_context"] else "off",
                "cold start s": r["cold_start_s"],
                "prompt p50 ms": r["prompt_p50_ms"],
                "prompt p95 ms": r["prompt_p95_ms"],
                "RSS MB": r["rss_steady_mb"],
                "peak RSS MB": r["rss_peak_mb"],
                "injected": r["injected"],
                "first prompt ms": r["first_prompt_ms"] or "-",
                "lexical while warming": r["lexical_during_warm_up"],
            }
            for r in rows
        ],
    )
    print(f"JSON: {write_json('sidecar', rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
