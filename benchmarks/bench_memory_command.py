"""pi's ``/memory`` subcommands in a warm session: how long each takes to answer.

Every subcommand goes through the session's sidecar to the warm engine (the
``tool`` request for status and search, ``cli`` for memlane's own commands:
stats, on|off, reindex, settings), as the pi package sends them
(integrations/pi/extensions/memlane/memory-command.ts). Two ways of driving it:

1. ``--part sidecar``: ``memlane sidecar`` (the relay pi starts, the console
   script's module) spoken to over stdio JSON-RPC as pi speaks it, after a
   session start and one warm-up round; the latency is the host's, from
   writing the request to reading its answer. Beside it, what each
   subcommand cost before, when pi spawned a ``memlane`` process for it (the
   same command line in a new process, ``--before`` runs).
2. ``--part pi``: the real pi (the end-to-end tests' cached install) in RPC
   mode: ``/memory <subcommand>`` sent as a prompt, until pi's response that
   the command was handled (its notification is out by then).

The project holds the demo's weeks of memory (indexed first) and pi
transcripts of ``--messages`` messages for the sessions layer; the engine
runs the bundled model. ``reindex`` answers once started (it re-embeds every
message in the engine; its run time is reported apart, and each round waits
for it before going on).

    python benchmarks/bench_memory_command.py [--rounds 20] [--before 3] [--part sidecar,pi]

Target (issue 29): each subcommand p95 <= 500 ms in a warm session.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # fake_llm, builders
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))  # pi_harness
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, percentile, print_table, write_json
from _transcript_builders import PiSession

TARGET_P95_MS = 500.0
FAST = [sys.executable, "-m", "memlane.cli.fast"]  # what the memlane console script runs
MEMLANE = str(Path(sys.executable).parent / "memlane")
CACHE = Path(os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e")
JOB_WAIT_S = 600.0

#: (name, the request's method and params) per subcommand, as memory-command.ts sends them.
SUBCOMMANDS: list[tuple[str, str, dict[str, Any]]] = [
    ("status", "tool", {"name": "memory_status", "arguments": {}}),
    (
        "search",
        "tool",
        {"name": "memory_search", "arguments": {"query": "flaky login test", "kind": "session"}},
    ),
    ("stats", "cli", {"argv": ["sessions", "stats"]}),
    ("off", "cli", {"argv": ["memory", "off"]}),
    ("on", "cli", {"argv": ["memory", "on"]}),
    ("settings", "cli", {"argv": ["config", "describe", "--json"]}),
    ("settings <key> <value>", "cli", {"argv": ["config", "set", "search.top_k", "6"]}),
    ("reindex (started)", "cli", {"argv": ["sessions", "reindex"], "detach": True}),
]
#: The same subcommands as pi's prompts (``--part pi``).
PI_PROMPTS = [
    ("status", "/memory status"),
    ("search", "/memory search flaky login test"),
    ("stats", "/memory stats"),
    ("off", "/memory off"),
    ("on", "/memory on"),
    ("settings <key> <value>", "/memory settings search.top_k 6"),
    ("reindex (started)", "/memory reindex"),
]
#: What pi spawned before (commands.ts ran these as a new ``memlane`` process).
BEFORE = {
    "stats": ["sessions", "stats"],
    "off": ["memory", "off"],
    "on": ["memory", "on"],
}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class Host:
    """pi's side of the sidecar protocol: requests in order, answers read back."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*FAST, "sidecar", "-C", str(project)],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
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
            if message.get("method") == "llm.complete":  # no capture runs here
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"text": "- x"}}
                self.proc.stdin.write(json.dumps(reply).encode() + b"\n")
                self.proc.stdin.flush()
                continue
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def wait_job(self, job: str) -> float:
        """Until the started command is done; its run time in the engine (s)."""
        deadline = time.monotonic() + JOB_WAIT_S
        while time.monotonic() < deadline:
            state = self.call("cli.job", {"job": job})
            if not state["running"]:
                if state.get("code") != 0:
                    raise RuntimeError(f"the job failed: {state}")
                return float(state["seconds"])
            time.sleep(0.2)
        raise TimeoutError(f"{job} still running after {JOB_WAIT_S:.0f} s")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.call("session_shutdown", {})
        self.proc.stdin.close()
        self.proc.wait(60)


def prepare(root: Path, messages: int) -> tuple[Path, dict[str, str]]:
    """A project with the demo's memory, indexed, and pi transcripts of *messages* messages."""
    from memlane.cli.demo import build_project
    from memlane.transcripts.locate import pi_session_dir_name

    env = {
        **os.environ,
        "MEMLANE_HOME": str(root / "home"),
        "PI_CODING_AGENT_DIR": str(root / "agent"),
    }
    project = build_project(root)
    subprocess.run([*FAST, "-C", str(project), "index"], env=env, check=True, capture_output=True)
    sessions = root / "agent" / "sessions" / pi_session_dir_name(str(project))
    sessions.mkdir(parents=True)
    per_file = 100
    for n in range(max(1, messages // per_file)):
        session = PiSession(f"bench-{n}")
        for i in range(per_file // 2):
            session.user(f"session {n}, question {i}: why is the login test flaky on CI run {i}?")
            session.assistant(
                f"Answer {i}: a token refresh race; the fixture reuses token {n}-{i}."
            )
        session.write(sessions / f"bench-{n}.jsonl")
    return project, env


def measure_sidecar(project: Path, env: dict[str, str], rounds: int) -> dict[str, Any]:
    host = Host(project, env)
    host.call(
        "session_start",
        {"cwd": str(project), "session_id": "bench", "transcript_path": None, "host": "pi"},
    )
    # Warm-up: one round of everything, the reindex run to its end (the model loaded,
    # the sessions layer built).
    reindex_runs: list[float] = []
    for _, method, params in SUBCOMMANDS:
        result = host.call(method, params)
        if params.get("detach"):
            host.wait_job(result["job"])
    walls: dict[str, list[float]] = {name: [] for name, _, _ in SUBCOMMANDS}
    for _ in range(rounds):
        for name, method, params in SUBCOMMANDS:
            t = time.perf_counter()
            result = host.call(method, params)
            walls[name].append((time.perf_counter() - t) * 1000)
            if params.get("detach"):
                reindex_runs.append(host.wait_job(result["job"]))
    host.close()
    return {"walls_ms": walls, "reindex_run_s": reindex_runs}


def measure_before(project: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    """The same commands as a new ``memlane`` process each, as pi used to run them."""
    out: dict[str, list[float]] = {}
    for name, argv in BEFORE.items():
        out[name] = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(
                [MEMLANE, "-C", str(project), *argv], env=env, check=True, capture_output=True
            )
            out[name].append((time.perf_counter() - t) * 1000)
    return out


def measure_pi(project: Path, env: dict[str, str], rounds: int) -> dict[str, Any] | None:
    """The real pi in RPC mode: ``/memory …`` from prompt to handled."""
    from pi_harness import NpmUnavailable, PiWorld, ensure_pi

    from fake_llm import FakeModel

    try:
        pi_install = ensure_pi(CACHE)
    except NpmUnavailable as exc:
        print(f"pi part skipped: {exc}")
        return None
    with FakeModel() as fake:
        world = PiWorld(
            pi_install,
            project.parent / "pi-world",
            fake.base_url,
            env_extra={"MEMLANE_HOME": env["MEMLANE_HOME"]},
        )
        world.install_package(MEMLANE)
        # The benchmark's project and transcripts, seen from pi's world.
        world.project.rmdir()
        world.project.symlink_to(project)
        agent_sessions = Path(env["PI_CODING_AGENT_DIR"]) / "sessions"
        (world.agent_dir / "sessions").symlink_to(agent_sessions)
        walls: dict[str, list[float]] = {name: [] for name, _ in PI_PROMPTS}
        with world.rpc() as pi:

            def run(prompt: str) -> float:
                t = time.perf_counter()
                pi.command("prompt", timeout_s=120, message=prompt)
                return (time.perf_counter() - t) * 1000

            def wait_for_reindex() -> None:
                """Until the footer entry of the reindex under way is cleared (it is done)."""
                pi.wait_record(
                    lambda r: r.get("method") == "setStatus" and not r.get("statusText"),
                    JOB_WAIT_S,
                )

            for _, prompt in PI_PROMPTS:  # warm-up round
                run(prompt)
            wait_for_reindex()
            for _ in range(rounds):
                for name, prompt in PI_PROMPTS:
                    walls[name].append(run(prompt))
                wait_for_reindex()
    return {"walls_ms": walls}


def rows_of(
    walls: dict[str, list[float]], before: dict[str, list[float]] | None
) -> list[dict[str, Any]]:
    rows = []
    for name, values in walls.items():
        p95 = percentile(values, 95)
        row: dict[str, Any] = {
            "subcommand": f"/memory {name}",
            "n": len(values),
            "p50 ms": median(values),
            "p95 ms": p95,
            "max ms": max(values),
            "target p95": f"<= {TARGET_P95_MS:.0f} ms {'✔' if p95 <= TARGET_P95_MS else '✘'}",
        }
        if before is not None:
            was = before.get(name)
            row["before: new process, median ms"] = median(was) if was else "-"
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--before", type=int, default=3, help="runs of each former CLI process")
    parser.add_argument("--messages", type=int, default=1000, help="messages in pi transcripts")
    parser.add_argument("--part", default="sidecar,pi")
    args = parser.parse_args()
    parts = set(args.part.split(","))
    results: dict[str, Any] = {
        "load_before": load(),
        "rounds": args.rounds,
        "messages": args.messages,
    }
    with tempfile.TemporaryDirectory(prefix="memlane-bench-memory-") as tmp:
        root = Path(tmp)
        project, env = prepare(root, args.messages)
        try:
            if "sidecar" in parts:
                measured = measure_sidecar(project, env, args.rounds)
                before = measure_before(project, env, args.before) if args.before else {}
                results["sidecar"] = {**measured, "before_ms": before}
                print_table(
                    f"/memory through the sidecar and the warm engine ({args.rounds} rounds, "
                    f"load {load()})",
                    rows_of(measured["walls_ms"], before),
                )
                runs = measured["reindex_run_s"]
                if runs:
                    print(
                        f"reindex of {args.messages} messages in the engine: median "
                        f"{median(runs):.1f} s (answered once started)"
                    )
            if "pi" in parts:
                measured_pi = measure_pi(project, env, args.rounds)
                if measured_pi is not None:
                    results["pi"] = measured_pi
                    print_table(
                        f"/memory in the real pi, RPC mode: prompt to handled ({args.rounds} rounds, "
                        f"load {load()})",
                        rows_of(measured_pi["walls_ms"], None),
                    )
        finally:
            from helpers import stop_engines

            stop_engines(Path(env["MEMLANE_HOME"]))
    results["load_after"] = load()
    print(f"JSON: {write_json('memory_command', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
