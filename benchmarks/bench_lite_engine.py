"""Searches through the warm engine on Milvus Lite: re-opens and latency.

A project with the demo's weeks of memory, indexed into a Milvus Lite
database; a warm engine serving ``memory_search`` tool calls on one
connection (as ``memlane mcp`` or pi's relay sends them), one every 0.5 s.
Two engine settings, in interleaved rounds (a fresh engine each round, its
first search not counted: it loads the model and opens the database):

- **released after each use**: ``engine.lite_hold_s = 0.2``, the linger
  every process had before the engine held Lite (and short-lived processes
  still have): the database is re-opened whenever 0.2 s passed since the
  last operation;
- **held by the engine**: the default ``engine.lite_hold_s`` (60 s): one
  client for as long as the engine is in use.

Re-opens are the Lite servers the engine started during the timed searches
(``memlane engine status``'s ``milvus_lite.opens``).

    python benchmarks/bench_lite_engine.py [--searches 20] [--rounds 3] [--gap 0.5]

Target (issue 26): Milvus Lite is held open by the engine between calls,
never re-opened per search.
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
from _common import median, percentile, print_table, write_json
from memlane.core import engine_client, link

MEMLANE = Path(sys.executable).with_name("memlane")
QUERIES = (
    "why did the invoice export fail",
    "how do we deploy",
    "the retry queue backoff",
    "what broke the webhook handler",
)
MODES = {"released after each use (0.2 s)": "0.2", "held by the engine (default)": None}


def prepare(root: Path, lite: Path) -> tuple[Path, dict[str, str]]:
    """The demo's project, indexed into *lite*; the environment every process uses."""
    from memlane.cli.demo import build_project

    project = build_project(root)
    env = {
        **os.environ,
        "MEMLANE_HOME": str(root / "home"),
        "MEMLANE_INDEX_BACKEND": "milvus",
        "MEMLANE_INDEX_URI": str(lite),
        "MEMLANE_SESSIONS_ENABLED": "off",
    }
    env.pop("MEMLANE_EMBEDDING_PROVIDER", None)  # the bundled model
    subprocess.run(
        [str(MEMLANE), "-C", str(project), "index"],
        env={**env, "MEMLANE_ENGINE": "off"},
        check=True,
        capture_output=True,
    )
    return project, env


def _call(client: engine_client.Client, method: str, params: dict[str, Any]) -> Any:
    return client.call(method, params, 120.0)


def one_round(project: Path, env: dict[str, str], searches: int, gap_s: float) -> dict[str, Any]:
    started = subprocess.run(
        [str(MEMLANE), "engine", "start"], env=env, cwd=project, capture_output=True, text=True
    )
    if started.returncode != 0:
        raise SystemExit(f"the engine did not start: {started.stderr}")
    place = link.Place(env["MEMLANE_HOME"], link.engine_key(env))
    deadline = time.monotonic() + 60
    try:
        with engine_client.Client.open(
            place, "bench", str(project), deadline, start=False
        ) as client:
            search = {"name": "memory_search", "arguments": {"query": QUERIES[0]}}
            _call(client, "tool", search)  # the model load and the first open
            before = _call(client, "engine.status", {})["milvus_lite"]["opens"]
            walls = []
            for i in range(searches):
                time.sleep(gap_s)
                query = QUERIES[i % len(QUERIES)] + f" {i}"
                t0 = time.perf_counter()
                _call(client, "tool", {"name": "memory_search", "arguments": {"query": query}})
                walls.append((time.perf_counter() - t0) * 1000)
            after = _call(client, "engine.status", {})["milvus_lite"]["opens"]
    finally:
        subprocess.run(
            [str(MEMLANE), "engine", "stop"], env=env, cwd=project, capture_output=True, check=False
        )
    return {"walls": walls, "reopens": after - before}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between searches")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memlane-bench-lite-") as tmp:
        root = Path(tmp)
        project, env = prepare(root, root / "milvus.db")
        results: dict[str, dict[str, Any]] = {m: {"walls": [], "reopens": 0} for m in MODES}
        for _ in range(args.rounds):
            for mode, hold in MODES.items():
                mode_env = dict(env)
                if hold is not None:
                    mode_env["MEMLANE_ENGINE_LITE_HOLD_S"] = hold
                got = one_round(project, mode_env, args.searches, args.gap)
                results[mode]["walls"] += got["walls"]
                results[mode]["reopens"] += got["reopens"]
    rows = [
        {
            "engine": mode,
            "searches": len(r["walls"]),
            "re-opens": r["reopens"],
            "re-opened %": 100.0 * r["reopens"] / max(1, len(r["walls"])),
            "p50 ms": median(r["walls"]),
            "p95 ms": percentile(r["walls"], 95),
        }
        for mode, r in results.items()
    ]
    title = (
        f"memory_search through the engine on Milvus Lite, one every {args.gap:g} s "
        f"({args.rounds} interleaved rounds; load {load_before:.1f} -> {os.getloadavg()[0]:.1f})"
    )
    print_table(title, rows)
    path = write_json(
        "lite_engine",
        {"args": vars(args), "load": [load_before, os.getloadavg()[0]], "rows": rows},
    )
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
