"""Warm recall as an agent's ``memory_search`` runs it, against another revision.

The notes search of a warm engine: query embedding with the bundled model,
both legs, fusion, and everything done after them (dates, bands, outdated
memories, echoes: engine/recall/trust.py). ``bench_search.py`` times the
index alone with given vectors; this is the path a user waits for.

The store is the two distilled-memory quality sets written as capture writes
them (benchmarks/quality: 84 + 72 entries in two projects). Each revision
runs in its own process (its ``src/`` first on ``sys.path``), which indexes
the stores, warms up, then times every question of both sets, several
rounds; the revisions alternate round by round so both meet the same load.

    python benchmarks/bench_recall.py [--against REV] [--rounds 5]

``--against`` (default ``HEAD``) is checked out into a temporary git
worktree. Reported: p50 / p95 per search and the ratio of this checkout's
p50 to the other's. Target (issue 27): within 10 % of the revision before
the trust work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile, print_table, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_WORKER = r"""
import json, os, sys, time
from pathlib import Path
src, root, rounds, data = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
sys.path.insert(0, src)
sys.path.insert(0, str(data))
os.environ["MEMLANE_HOME"] = str(root / "home")
from coding_store import load_set, write_coding_store
from memlane.engine.project import Memory
sets = [load_set(data / name)
        for name in ("coding_memory.json", "changed_memory.json")]
memories, queries = [], []
for i, data in enumerate(sets):
    project = root / f"p{i}"
    if not project.exists():
        write_coding_store(data, project)
    mem = Memory.open(project)
    mem.sync()
    memories.append(mem)
    queries.append([q.text for q in data.questions])
for mem, qs in zip(memories, queries):
    for q in qs[:5]:
        mem.search(q, 5, sync=False)  # warm: model loaded, matrix read
print("ready", flush=True)
for _ in range(rounds):
    sys.stdin.readline()
    times = []
    for mem, qs in zip(memories, queries):
        for q in qs:
            started = time.perf_counter()
            mem.search(q, 5, sync=False)
            times.append((time.perf_counter() - started) * 1000)
    print(json.dumps(times), flush=True)
"""


def _worker(src: Path, root: Path, rounds: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    env[CACHE_DIR_ENV] = os.environ.get(CACHE_DIR_ENV) or str(cache_dir())
    proc = subprocess.Popen(
        # The sets (and their writer) of this checkout for both revisions.
        [sys.executable, "-c", _WORKER, str(src), str(root), str(rounds), str(HERE / "quality")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        raise SystemExit(f"the worker for {src} did not start: {line!r}")
    return proc


def _round(proc: subprocess.Popen[str]) -> list[float]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    times: list[float] = json.loads(proc.stdout.readline())
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    with tempfile.TemporaryDirectory(prefix="memlane-bench-recall-") as tmp:
        other = Path(tmp) / "other"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(other), args.against],
            check=True,
            capture_output=True,
        )
        try:
            workers = {
                "this checkout": _worker(REPO / "src", Path(tmp) / "a", args.rounds),
                args.against: _worker(other / "src", Path(tmp) / "b", args.rounds),
            }
            times: dict[str, list[float]] = {name: [] for name in workers}
            for _ in range(args.rounds):
                for name, proc in workers.items():
                    times[name] += _round(proc)
            for proc in workers.values():
                proc.communicate(timeout=60)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(other)],
                check=False,
                capture_output=True,
            )
    rows: list[dict[str, Any]] = []
    base = percentile(times[args.against], 50)
    for name, values in times.items():
        p50 = percentile(values, 50)
        rows.append(
            {
                "revision": name,
                "searches": len(values),
                "p50 ms": round(p50, 2),
                "p95 ms": round(percentile(values, 95), 2),
                "p50 ratio": round(p50 / base, 3) if base else None,
            }
        )
    print_table("warm notes search, query embedding included", rows)
    write_json("recall", {"against": args.against, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
