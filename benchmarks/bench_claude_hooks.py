"""Claude Code's hooks as Claude Code runs them: one process per hook call.

Runs the real hook command (``python -I -S hook.py``, the installed hooks'
command) with Claude Code-shaped input on the demo project (a few weeks of
memory, indexed first), and measures the wall time of each call from
spawning the process to its exit:

- cold: the first SessionStart with no engine running (it starts one);
- warm, per event: SessionStart (resume), UserPromptSubmit, Stop (a new
  turn appended to the transcript each time, 1 s apart: ``--stop-gap``),
  PreCompact, and SessionEnd (each of a session opened for it);
- the floor: ``MEMLANE_NO_HOOKS=1`` (the process start alone), one call
  before each measured one, so each row has the floor of its own minutes
  and its ratio to it;
- the engine's RSS after the warm calls (steady) and its peak (VmHWM).

    python benchmarks/bench_claude_hooks.py [--calls 50] [--cold 5] [--auto-context]

Targets: warm p50 <= 50 ms, p95 <= 100 ms per call; engine RSS <= 300 MB.

``--claude N`` measures instead inside the real Claude Code (the binary the
end-to-end tests install, against their fake Messages API on 127.0.0.1):
N ``claude -p`` sessions of memlane in plugin mode, alternating with N in
which the hook exits at once (``MEMLANE_NO_HOOKS=1``: the process start as
Claude Code pays it). Each hook's time is read from Claude Code's debug log
(``finished with status 0 (N ms)``), and the engine's share from its log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


def stats(name: str, walls: list[float], floors: list[float] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "event": name,
        "calls": len(walls),
        "p50_ms": percentile(walls, 50),
        "p95_ms": percentile(walls, 95),
        "max_ms": max(walls),
    }
    if floors:
        row["floor_p50_ms"] = percentile(floors, 50)
        row["x_floor"] = round(percentile(walls, 50) / percentile(floors, 50), 2)
    return row


def measure(
    bench: Bench, calls: int, colds: int, gap_s: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each warm call is preceded by a call of the process start alone
    (``MEMLANE_NO_HOOKS=1``), so every row has the floor of its own minutes."""
    rows = []
    off = {"MEMLANE_NO_HOOKS": "1"}
    floors: list[float] = []

    def timed(walls: list[float], event: str, session: str, **fields: Any) -> None:
        floors.append(bench.call("SessionStart", "floor", off, source="startup")[0])
        walls.append(bench.call(event, session, **fields)[0])

    cold = []
    for i in range(colds):
        bench.stop_engine()
        wall, out = bench.call("SessionStart", f"cold-{i}", source="startup")
        assert out, "the cold SessionStart printed nothing"
        cold.append(wall)
    session = "warm"
    bench.call("SessionStart", session, source="startup")
    resumes: list[float] = []
    for _ in range(calls):
        timed(resumes, "SessionStart", session, source="resume")
    rows.append(stats("SessionStart (resume)", resumes, floors[-calls:]))
    prompts: list[float] = []
    for i in range(calls):
        timed(prompts, "UserPromptSubmit", session, prompt=PROMPTS[i % len(PROMPTS)] + f" ({i})")
    rows.append(stats("UserPromptSubmit", prompts, floors[-calls:]))
    stops: list[float] = []
    for _ in range(calls):
        bench.add_turn(session)
        timed(stops, "Stop", session)
        # Each capture leaves work behind (the entry written, the transcript's
        # new messages embedded for the sessions layer); in a session a whole
        # model turn separates two Stops. Back to back, a Stop would measure
        # the previous one's background work on the same cores.
        time.sleep(gap_s)
    rows.append(stats(f"Stop (capture journaled; {gap_s:g} s apart)", stops, floors[-calls:]))
    compacts: list[float] = []
    for _ in range(calls):
        timed(compacts, "PreCompact", session, trigger="auto")
    rows.append(stats("PreCompact", compacts, floors[-calls:]))
    time.sleep(2)  # let the captures and the debounced index settle: steady state
    pid = bench.engine_pid()
    assert pid is not None
    steady, peak = rss_mb(pid)
    starts: list[float] = []
    ends: list[float] = []
    n = min(calls, 20)
    for i in range(n):
        # What every `claude -p` does: a new session, then its end.
        timed(starts, "SessionStart", f"end-{i}", source="startup")
        timed(ends, "SessionEnd", f"end-{i}", reason="other")
    rows.append(stats("SessionStart (a new session)", starts, floors[-2 * n :: 2]))
    rows.append(stats("SessionEnd (session flushed)", ends, floors[-2 * n + 1 :: 2]))
    rows.insert(0, stats("SessionStart, cold (starts the engine)", cold))
    rows.insert(0, stats("process start only (MEMLANE_NO_HOOKS=1)", floors))
    bench.call("SessionEnd", session, reason="other")
    bench.stop_engine()
    return rows, {"rss_steady_mb": steady, "rss_peak_mb": peak}


#: Claude Code 2.1's debug line for a finished command hook, and the engine's own line.
CLAUDE_HOOK_RE = re.compile(r"Hooks: (\w+)(?::\w+)? \[[^\]]*hook\.py\].* status \d+ \((\d+)ms\)")
ENGINE_HOOK_RE = re.compile(r"INFO (\w+) \w{8}: (\d+) ms")


def measure_claude(sessions: int, auto_context: bool) -> int:
    """Hooks as the real Claude Code runs them (``--claude``)."""
    repo = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(repo / "tests"), str(repo / "tests" / "e2e")]
    from claude_harness import ClaudeWorld, ensure_claude

    from fake_anthropic import FakeClaude

    cache = Path(os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e")
    claude = ensure_claude(cache)
    times: dict[str, dict[str, list[float]]] = {"memlane": {}, "floor": {}, "engine": {}}
    walls: dict[str, list[float]] = {"memlane": [], "floor": []}
    with tempfile.TemporaryDirectory(prefix="memlane-bench-cc-") as tmp, FakeClaude() as model:
        world = ClaudeWorld(
            claude,
            Path(tmp),
            model.base_url,
            env_extra={"MEMLANE_AUTO_CONTEXT": "on" if auto_context else "off"},
        )
        world.install()
        world.trust_project()
        debug = world.home / ".claude" / "debug"
        try:
            world.run("warm up", "--debug")  # starts the engine: the cold start is not measured
            for i in range(sessions):
                for kind, env in (("memlane", {}), ("floor", {"MEMLANE_NO_HOOKS": "1"})):
                    before = set(debug.glob("*.txt")) if debug.is_dir() else set()
                    result = world.run(f"hello {i}", "--debug", **env)
                    walls[kind].append(result.seconds)
                    for log in set(debug.glob("*.txt")) - before:
                        for event, ms in CLAUDE_HOOK_RE.findall(log.read_text(errors="replace")):
                            times[kind].setdefault(event, []).append(float(ms))
            for event, ms in ENGINE_HOOK_RE.findall(world.engine_log()):
                times["engine"].setdefault(event, []).append(float(ms))
        finally:
            world.stop_engine()
    rows = []
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact"):
        got = times["memlane"].get(event)
        if not got:
            continue
        floor = times["floor"].get(event, [])
        engine = times["engine"].get(event, [])[1:]  # the warm-up session's start was cold
        rows.append(
            {
                "event": event,
                "calls": len(got),
                "p50 ms": percentile(got, 50),
                "p95 ms": percentile(got, 95),
                "floor p50": percentile(floor, 50) if floor else float("nan"),
                "floor p95": percentile(floor, 95) if floor else float("nan"),
                "engine p50": percentile(engine, 50) if engine else float("nan"),
                "engine p95": percentile(engine, 95) if engine else float("nan"),
            }
        )
    load = os.getloadavg()[0]
    print_table(
        f"Hooks inside the real Claude Code {claude.version}, {sessions} sessions each way "
        f"(auto-context {'on' if auto_context else 'off'}, load {load:.1f}); floor: "
        "the hook exits at once (MEMLANE_NO_HOOKS=1)",
        rows,
    )
    print(
        f"\nclaude -p wall p50: {percentile(walls['memlane'], 50):.2f} s with memlane's hooks, "
        f"{percentile(walls['floor'], 50):.2f} s with hooks that exit at once"
    )
    name = "claude_hooks_real" + ("_auto_context" if auto_context else "")
    result = {"auto_context": auto_context, "load": load, "rows": rows, "walls_s": walls}
    print(f"JSON: {write_json(name, result)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--auto-context", action="store_true")
    parser.add_argument("--stop-gap", type=float, default=1.0, help="seconds between Stops")
    parser.add_argument(
        "--claude", type=int, default=0, metavar="N", help="N real claude -p sessions instead"
    )
    args = parser.parse_args()
    if args.claude:
        return measure_claude(args.claude, args.auto_context)
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
                "floor p50": r.get("floor_p50_ms", ""),
                "x floor": r.get("x_floor", ""),
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
