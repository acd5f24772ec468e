"""Claude Code's hooks as Claude Code runs them: one process per hook call.

Runs the real hook command (``python -I -S hook.py``, the installed hooks'
command) with Claude Code-shaped input on the demo project (a few weeks of
memory, indexed first), and measures the wall time of each call from
spawning the process to its exit:

- cold: the first SessionStart with no engine running (it starts one);
- warm, per event: SessionStart (resume), UserPromptSubmit, Stop (a new
  turn appended to the transcript each time, 1 s apart: ``--stop-gap``),
  PreCompact, and SessionEnd (each of a session opened for it);
- the floor: ``MEMLANE_NO_HOOKS=1`` (the process start alone);
- the engine's RSS after the warm calls (steady) and its peak (VmHWM).

    python benchmarks/bench_claude_hooks.py [--calls 50] [--cold 5] [--auto-context]

Targets: warm p50 <= 50 ms, p95 <= 100 ms per call; engine RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memlane.core import link

sys.path.insert(0, str(Path(__file__).parent))
import memlane
from _common import percentile, print_table, write_json
from bench_sidecar import PROMPTS, prepare, rss_mb

HOOK = Path(memlane.__file__).parent / "hosts" / "claude_code" / "hook.py"
SRC = Path(memlane.__file__).parent.parent


class Bench:
    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project = project
        self.env = env
        self.turns = 0

    def call(
        self, event: str, session_id: str, env: dict[str, str] | None = None, **fields: Any
    ) -> tuple[float, bytes]:
        payload = {
            "hook_event_name": event,
            "session_id": session_id,
            "transcript_path": str(self.transcript(session_id)),
            "cwd": str(self.project),
            **fields,
        }
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(HOOK)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={**self.env, **(env or {})},
            check=True,
        )
        return (time.perf_counter() - started) * 1000, done.stdout

    def transcript(self, session_id: str) -> Path:
        return self.project.parent / f"{session_id}.jsonl"

    def add_turn(self, session_id: str) -> None:
        """One more Claude Code turn in the transcript: a prompt and a two-line reply."""
        self.turns += 1
        n = self.turns
        lines = [
            {"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"q{n}?"}},
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"Answer {n}: the retry queue."}],
                },
            },
        ]
        with self.transcript(session_id).open("a", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps({**line, "sessionId": session_id, "parentUuid": None}) + "\n")

    def engine_pid(self) -> int | None:
        place = link.Place(self.env["MEMLANE_HOME"], link.engine_key(self.env))
        try:
            pid = int(Path(place.lock).read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return None
        return pid

    def stop_engine(self) -> None:
        pid = self.engine_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while self.engine_pid() is not None and time.monotonic() < deadline:
            time.sleep(0.05)


def stats(name: str, walls: list[float]) -> dict[str, Any]:
    return {
        "event": name,
        "calls": len(walls),
        "p50_ms": percentile(walls, 50),
        "p95_ms": percentile(walls, 95),
        "max_ms": max(walls),
    }


def measure(
    bench: Bench, calls: int, colds: int, gap_s: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = []
    off = {"MEMLANE_NO_HOOKS": "1"}
    floor = [bench.call("SessionStart", "floor", off, source="startup")[0] for _ in range(calls)]
    rows.append(stats("process start only (MEMLANE_NO_HOOKS=1)", floor))
    cold = []
    for i in range(colds):
        bench.stop_engine()
        wall, out = bench.call("SessionStart", f"cold-{i}", source="startup")
        assert out, "the cold SessionStart printed nothing"
        cold.append(wall)
    rows.append(stats("SessionStart, cold (starts the engine)", cold))
    session = "warm"
    bench.call("SessionStart", session, source="startup")
    rows.append(
        stats(
            "SessionStart (resume)",
            [bench.call("SessionStart", session, source="resume")[0] for _ in range(calls)],
        )
    )
    prompts = [
        bench.call("UserPromptSubmit", session, prompt=PROMPTS[i % len(PROMPTS)] + f" ({i})")[0]
        for i in range(calls)
    ]
    rows.append(stats("UserPromptSubmit", prompts))
    stops = []
    for _ in range(calls):
        bench.add_turn(session)
        stops.append(bench.call("Stop", session)[0])
        # Each capture leaves work behind (the entry written, the transcript's
        # new messages embedded for the sessions layer); in a session a whole
        # model turn separates two Stops. Back to back, a Stop would measure
        # the previous one's background work on the same cores.
        time.sleep(gap_s)
    rows.append(stats(f"Stop (capture journaled; {gap_s:g} s apart)", stops))
    rows.append(
        stats(
            "PreCompact",
            [bench.call("PreCompact", session, trigger="auto")[0] for _ in range(calls)],
        )
    )
    time.sleep(2)  # let the captures and the debounced index settle: steady state
    pid = bench.engine_pid()
    assert pid is not None
    steady, peak = rss_mb(pid)
    ends = []
    for i in range(min(calls, 20)):
        bench.call("SessionStart", f"end-{i}", source="startup")
        ends.append(bench.call("SessionEnd", f"end-{i}", reason="other")[0])
    rows.append(stats("SessionEnd (session flushed)", ends))
    bench.call("SessionEnd", session, reason="other")
    bench.stop_engine()
    return rows, {"rss_steady_mb": steady, "rss_peak_mb": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--auto-context", action="store_true")
    parser.add_argument("--stop-gap", type=float, default=1.0, help="seconds between Stops")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-hooks-") as tmp:
        home = Path(tmp) / "home"
        os.environ["MEMLANE_HOME"] = str(home)
        project = prepare(Path(tmp))
        env = {
            **os.environ,
            "MEMLANE_HOME": str(home),
            "PYTHONPATH": str(SRC),
            "MEMLANE_LLM_PROVIDER": "none",
            "MEMLANE_AUTO_CONTEXT": "on" if args.auto_context else "off",
        }
        rows, rss = measure(Bench(project, env), args.calls, args.cold, args.stop_gap)
    load = os.getloadavg()[0]
    title = (
        f"Claude Code hook calls, process start included (auto-context "
        f"{'on' if args.auto_context else 'off'}, load {load:.1f})"
    )
    print_table(
        title,
        [
            {
                "event": r["event"],
                "calls": r["calls"],
                "p50 ms": r["p50_ms"],
                "p95 ms": r["p95_ms"],
                "max ms": r["max_ms"],
            }
            for r in rows
        ],
    )
    print(f"\nengine RSS: {rss['rss_steady_mb']:.0f} MB steady, {rss['rss_peak_mb']:.0f} MB peak")
    name = "claude_hooks" + ("_auto_context" if args.auto_context else "")
    result = {"auto_context": args.auto_context, "load": load, "rows": rows, **rss}
    print(f"JSON: {write_json(name, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
