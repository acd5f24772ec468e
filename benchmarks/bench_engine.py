"""One warm engine serving several projects and sessions, against a process per session.

Three projects holding the demo's weeks of memory (indexed first), two pi
sessions in each, driven the way pi drives them: a real ``memlane sidecar``
process per session speaking the sidecar protocol on stdio (session start,
prompts with auto-context on, a ``memory_search``), then every session ended.

- **engine**: the relays reach one warm engine (``engine.idle_s`` set short);
  its RSS (steady and peak) and the RSS of every memlane process together;
  then, once every session ended, how long until the engine exits idle and
  how many memlane processes are left;
- **no engine** (``MEMLANE_ENGINE=off``): each ``memlane sidecar`` serves its
  session in its own process, as before the engine; the same figures.

    python benchmarks/bench_engine.py [--prompts 10] [--idle 5]

Target (issue 26): one engine serving 3 projects x 2 sessions: RSS <= 300 MB,
and 0 processes left after its idle exit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile, print_table, write_json
from bench_sidecar import PROMPTS, Host, prepare, rss_mb
from memlane.core import link

MEMLANE = Path(sys.executable).with_name("memlane")
PROJECTS = 3
SESSIONS_PER_PROJECT = 2


def memlane_pids(home: Path) -> list[int]:
    """Every live process with *home* as its MEMLANE_HOME."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and f"MEMLANE_HOME={home}".encode() in environ:
            found.append(int(entry))
    return found


def engine_pid(env: dict[str, str]) -> int | None:
    place = link.Place(env["MEMLANE_HOME"], link.engine_key(env))
    try:
        return int(Path(place.lock).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def run(
    projects: list[Path], home: Path, *, engine: bool, prompts: int, idle_s: float
) -> dict[str, Any]:
    env = {
        **os.environ,
        "MEMLANE_HOME": str(home),
        "MEMLANE_AUTO_CONTEXT": "on",
        "MEMLANE_ENGINE_IDLE_S": str(idle_s),
        "MEMLANE_SESSIONS_ENABLED": "off",
    }
    if not engine:
        env["MEMLANE_ENGINE"] = "off"
    hosts: list[tuple[Host, Path]] = []
    starts: list[float] = []
    for project in projects:
        for n in range(SESSIONS_PER_PROJECT):
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [str(MEMLANE), "sidecar", "-C", str(project)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            host = Host(proc)
            host.call(
                "session_start",
                {
                    "cwd": str(project),
                    "session_id": f"{project.name}-{n}",
                    "transcript_path": None,
                    "host": "bench",
                },
            )
            starts.append((time.perf_counter() - t0) * 1000)
            hosts.append((host, project))
    walls = []
    for i in range(prompts):
        for host, _ in hosts:
            t = time.perf_counter()
            host.call("before_agent_start", {"prompt": PROMPTS[i % len(PROMPTS)] + f" ({i})"})
            walls.append((time.perf_counter() - t) * 1000)
    for host, _ in hosts:
        host.call("tool", {"name": "memory_search", "arguments": {"query": PROMPTS[1]}})
    pids = memlane_pids(home)
    total_rss = sum(rss_mb(pid)[0] for pid in pids)
    pid = engine_pid(env) if engine else None
    steady, peak = rss_mb(pid) if pid is not None else (float("nan"), float("nan"))
    for host, _ in hosts:
        host.call("session_shutdown", {})
        assert host.proc.stdin is not None
        host.proc.stdin.close()
    for host, _ in hosts:
        host.proc.wait(60)
    ended = time.monotonic()
    while memlane_pids(home) and time.monotonic() - ended < idle_s + 60:
        time.sleep(0.1)
    left = memlane_pids(home)
    return {
        "mode": "one warm engine" if engine else "a process per session",
        "sessions": len(hosts),
        "processes": len(pids),
        "engine_rss_mb": steady,
        "engine_peak_mb": peak,
        "total_rss_mb": total_rss,
        "session_start_p50_ms": percentile(starts, 50),
        "prompt_p50_ms": percentile(walls, 50),
        "prompt_p95_ms": percentile(walls, 95),
        "exit_after_last_session_s": time.monotonic() - ended,
        "processes_left": len(left),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--idle", type=float, default=5.0, help="engine.idle_s for the run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-engine-") as tmp:
        root = Path(tmp)
        projects = [prepare(root / f"p{i}") for i in range(PROJECTS)]
        rows = [
            run(
                projects, root / "home-engine", engine=True, prompts=args.prompts, idle_s=args.idle
            ),
            run(
                projects, root / "home-alone", engine=False, prompts=args.prompts, idle_s=args.idle
            ),
        ]
    print_table(
        f"{PROJECTS} projects x {SESSIONS_PER_PROJECT} pi sessions (auto-context on, bundled model)",
        [
            {
                "mode": r["mode"],
                "processes": r["processes"],
                "engine RSS MB": r["engine_rss_mb"],
                "engine peak MB": r["engine_peak_mb"],
                "all memlane RSS MB": r["total_rss_mb"],
                "session_start p50 ms": r["session_start_p50_ms"],
                "prompt p50 ms": r["prompt_p50_ms"],
                "prompt p95 ms": r["prompt_p95_ms"],
                "gone after s": r["exit_after_last_session_s"],
                "left": r["processes_left"],
            }
            for r in rows
        ],
    )
    print("target: engine RSS <= 300 MB; 0 processes left after the idle exit")
    print(f"JSON: {write_json('engine', rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
