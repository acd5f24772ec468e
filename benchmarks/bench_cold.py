"""Cold ``memlane search``: a new process each time, model load included.

python benchmarks/bench_cold.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median, percentile, print_table, write_json

QUERIES = [
    "why were customers charged twice",
    "how long do we cache exchange rates",
    "what broke in the friday deploy",
    "flaky test in CI",
    "postgres connection pool size",
]


def _memlane() -> str:
    exe = Path(sys.executable).parent / "memlane"
    return str(exe) if exe.exists() else shutil.which("memlane") or "memlane"


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = 0
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    from memlane.cli.demo import build_project

    root = Path(tempfile.mkdtemp(prefix="memlane-bench-cold-"))
    env = dict(os.environ, MEMLANE_HOME=str(root / "home"))
    project = build_project(root)
    exe = _memlane()
    subprocess.run([exe, "-C", str(project), "index"], env=env, check=True, capture_output=True)
    rows = []
    for label, extra in (("hybrid (model load)", []), ("lexical", ["--lexical"])):
        walls, rss = [], []
        for i in range(args.runs):
            query = QUERIES[i % len(QUERIES)]
            wall, peak = run_once([exe, "-C", str(project), "search", query, *extra], env)
            walls.append(wall)
            rss.append(peak)
        rows.append(
            {
                "command": f"memlane search {label}",
                "runs": args.runs,
                "p50_s": round(median(walls), 3),
                "p95_s": round(percentile(walls, 95), 3),
                "min_s": round(min(walls), 3),
                "peak_rss_mb": round(max(rss), 1),
            }
        )
    shutil.rmtree(root, ignore_errors=True)
    print_table("Cold `memlane search` (new process, demo store indexed)", rows)
    print(f"\nwrote {write_json('cold', {'cases': rows, 'target_p50_s': 1.0})}")


if __name__ == "__main__":
    main()
