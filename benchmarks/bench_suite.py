"""How long the test lanes take: the fast lane, each marked lane, the whole suite.

python benchmarks/bench_suite.py [--lanes fast,subprocess,parity,e2e,all] [--slowest N]

Each lane is one ``pytest`` process, as ``make test-fast`` / ``make test``
start it (no lint here: that is ``make lint``'s time). The wall time is
read around the process; pytest's own per-test durations give the slowest
tests and the share of set-up. Targets (issue 12): the fast lane ≤ 90 s on
2 cores, the whole ``make test`` ≤ 6 minutes with the pi end-to-end tests.
Not part of ``make bench``: it runs the test suite, for minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
LANES = {
    "fast": "not e2e and not parity and not subprocess",
    "subprocess": "subprocess and not e2e",
    "parity": "parity",
    "e2e": "e2e",
    "all": None,
}
_SUMMARY_RE = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?)")
_DURATION_RE = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)")


def run_lane(name: str, marker: str | None, slowest: int) -> dict[str, object]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0"]
    if marker is not None:
        command += ["-m", marker]
    # As the Makefile runs pytest: bytecode (and pytest's rewritten tests) cached.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    lines = done.stdout.splitlines()
    counts = {kind: 0 for kind in ("passed", "failed", "skipped", "deselected", "errors")}
    for number, kind in _SUMMARY_RE.findall(lines[-1] if lines else ""):
        counts["errors" if kind.startswith("error") else kind] += int(number)
    durations: dict[str, float] = {}
    setup = 0.0
    for line in lines:
        match = _DURATION_RE.match(line)
        if match:
            seconds, phase, test = float(match[1]), match[2], match[3]
            durations[test] = durations.get(test, 0.0) + seconds
            setup += seconds if phase != "call" else 0.0
    top = sorted(durations.items(), key=lambda item: item[1], reverse=True)[:slowest]
    return {
        "lane": name,
        "marker": marker or "(every test)",
        "wall_s": round(wall, 1),
        "exit_code": done.returncode,
        **counts,
        "setup_teardown_s": round(setup, 1),
        "slowest": [{"test": test, "seconds": round(s, 2)} for test, s in top],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lanes", default="fast,all", help="comma-separated: " + ",".join(LANES))
    parser.add_argument("--slowest", type=int, default=10)
    args = parser.parse_args()
    chosen = [lane.strip() for lane in args.lanes.split(",") if lane.strip()]
    unknown = [lane for lane in chosen if lane not in LANES]
    if unknown:
        parser.error(f"unknown lane(s) {', '.join(unknown)}; the lanes are {', '.join(LANES)}")
    results = [run_lane(lane, LANES[lane], args.slowest) for lane in chosen]
    print_table(
        "test lanes (one pytest process each)",
        [
            {k: r[k] for k in ("lane", "wall_s", "passed", "failed", "skipped", "exit_code")}
            for r in results
        ],
    )
    for result in results:
        slow = result["slowest"]
        assert isinstance(slow, list)
        print_table(f"slowest in lane {result['lane']}", slow[: args.slowest])
    path = write_json("suite", {"lanes": results})
    print(f"\n{path}")
    return 0 if all(r["exit_code"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
