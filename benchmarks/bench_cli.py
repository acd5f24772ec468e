"""The ``memlane`` command as a person or an agent runs it: a new process per call.

    python benchmarks/bench_cli.py [--runs 15] [--no-compile]

Over the indexed demo store, each round runs, interleaved (so every row
meets the same machine load):

- ``python -c pass``: the interpreter alone, the floor and the unit of the ratios;
- ``memlane search QUERY`` (hybrid: the model loads) and ``--lexical``, with
  no engine running (``MEMLANE_ENGINE=off``): imports, index, model, search;
- ``memlane search QUERY`` with the engine running (``memlane engine
  start`` first): the command handed to the warm engine (cli/fast.py);
- ``memlane write TEXT`` both ways, into a second project (a write makes the
  next search index it; the searched store stays as it is).

It reports p50 / p95 wall time, p50 CPU time of the process (user + system:
what the machine's load does not inflate as much) and the ratio of each p50
to ``python -c pass``'s, as a table and as ``benchmarks/results/cli.json``.
Before measuring, the package's ``.pyc`` files are written (``compileall``,
as an install does; ``--no-compile`` skips it) and one untimed run of each
command fills the caches a user's machine has (the int8 model, the redaction
patterns). ``PYTHONDONTWRITEBYTECODE`` is removed from the commands' environment.

Targets (issue 26): search with an engine running p50 <= 100 ms; without one
p50 <= 0.8 s on the busy 2-core machine. This replaces bench_cold.py.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import memlane
from _common import percentile, print_table, write_json
from memlane.core import link

QUERIES = [
    "why were customers charged twice",
    "how long do we cache exchange rates",
    "what broke in the friday deploy",
    "flaky test in CI",
    "postgres connection pool size",
]
TARGETS = {"search, engine running": 0.100, "search (hybrid), no engine": 0.8}


def memlane_script() -> str:
    exe = Path(sys.executable).parent / "memlane"
    return str(exe) if exe.exists() else shutil.which("memlane") or "memlane"


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, exit status) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if proc.stderr is not None:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


class Engine:
    """The warm engine of the benchmark's environment, started again if something
    stopped it (another test run on the machine may stop every engine)."""

    def __init__(self, exe: str, env: dict[str, str], cwd: Path) -> None:
        self.exe, self.env, self.cwd = exe, env, cwd
        self.place = link.Place(env["MEMLANE_HOME"], link.engine_key(env))
        self.restarts = -1

    def pid(self) -> int | None:
        try:
            pid = int(Path(self.place.lock).read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return None
        return pid

    def ensure(self, warm: list[str]) -> None:
        if self.pid() is not None:
            return
        self.restarts += 1
        subprocess.run([self.exe, "engine", "start"], env=self.env, cwd=self.cwd, check=True)
        run_once([self.exe, *warm], self.env, self.cwd)  # the model loads once, untimed

    def stop(self) -> None:
        subprocess.run(
            [self.exe, "engine", "stop", "--all"], env=self.env, cwd=self.cwd, check=False
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    from memlane.cli.demo import build_project

    if not args.no_compile:
        compileall.compile_dir(Path(memlane.__file__).parent, quiet=1)
    root = Path(tempfile.mkdtemp(prefix="memlane-bench-cli-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base["MEMLANE_HOME"] = str(root / "home")
    cold = {**base, "MEMLANE_ENGINE": "off"}
    searched = build_project(root)
    written = root / "notes"
    (written / ".git").mkdir(parents=True)
    exe = memlane_script()
    subprocess.run([exe, "index"], env=cold, cwd=searched, check=True, capture_output=True)
    engine = Engine(exe, base, searched)
    py = [sys.executable, "-c", "pass"]
    # (label, argv, env, cwd, engine): the query or text is filled in per round.
    cases: list[tuple[str, list[str], dict[str, str], Path, bool]] = [
        ("python -c pass", py, base, searched, False),
        ("search (hybrid), no engine", [exe, "search", "{q}"], cold, searched, False),
        ("search --lexical, no engine", [exe, "search", "--lexical", "{q}"], cold, searched, False),
        ("search, engine running", [exe, "search", "{q}"], base, searched, True),
        ("write, no engine", [exe, "write", "{t}"], cold, written, False),
        ("write, engine running", [exe, "write", "{t}"], base, written, True),
    ]
    warm = ["search", QUERIES[0]]
    try:
        engine.ensure(warm)
        for _, argv, env, cwd, _ in cases:  # caches a user's machine has: untimed
            run_once([a.format(q=QUERIES[0], t="warm-up note") for a in argv], env, cwd)
        samples: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in cases}
        failures = 0
        for i in range(args.runs):
            for label, argv, env, cwd, served in cases:
                if served:
                    engine.ensure(warm)
                text = f"bench note {i}: the retry queue backs off {i} times"
                wall, cpu, code = run_once(
                    [a.format(q=QUERIES[i % len(QUERIES)], t=text) for a in argv], env, cwd
                )
                failures += code != 0
                samples[label].append((wall, cpu))
        rss = _rss_mb(engine.pid())
    finally:
        engine.stop()
        shutil.rmtree(root, ignore_errors=True)
    floor = statistics.median(w for w, _ in samples["python -c pass"])
    rows = []
    for label, *_ in cases:
        walls = [w for w, _ in samples[label]]
        p50 = statistics.median(walls)
        target = TARGETS.get(label)
        rows.append(
            {
                "command": label,
                "runs": len(walls),
                "p50_ms": round(p50 * 1000, 1),
                "p95_ms": round(percentile(walls, 95) * 1000, 1),
                "cpu_p50_ms": round(statistics.median(c for _, c in samples[label]) * 1000, 1),
                "x_python": round(p50 / floor, 1),
                "target": "" if target is None else f"<= {target * 1000:.0f} ms",
                "met": "" if target is None else ("yes" if p50 <= target else "NO"),
            }
        )
    load = os.getloadavg()
    print_table(
        f"memlane from the command line, a new process per call ({args.runs} interleaved "
        f"rounds, load {load[0]:.1f} / {load[2]:.1f})",
        rows,
    )
    print(
        f"\nengine restarted {max(engine.restarts, 0)} time(s); RSS {rss} MB; failures {failures}"
    )
    result: dict[str, Any] = {
        "runs": args.runs,
        "load_1m": load[0],
        "load_15m": load[2],
        "engine_restarts": max(engine.restarts, 0),
        "engine_rss_mb": rss,
        "failed_runs": failures,
        "rows": rows,
    }
    print(f"JSON: {write_json('cli', result)}")
    return 1 if failures else 0


def _rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main())
