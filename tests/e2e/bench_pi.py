"""Measure memlane inside the real pi (a benchmark, not a test; run it by hand).

    .venv/bin/python tests/e2e/bench_pi.py [--prompts 50] [--entries 300]

Reports, from the extension's own timings (MEMLANE_PI_TIMINGS):
  * the sidecar's cold start: spawn to the answered session_start;
  * the time pi waits in before_agent_start, p50/p95 over N prompts, with
    auto-context off and on (the store seeded with old entries so the
    search has work to do);
  * the sidecar's RSS (VmRSS now, VmHWM peak) after the prompts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fake_llm, helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from pi_harness import PiWorld, ensure_pi, sidecar_pids

from fake_llm import FakeModel, Reply
from helpers import NOW

TOPICS = ["cache", "queue", "auth", "billing", "search", "deploy", "logging", "metrics"]


def seed(project: Path, entries: int) -> None:
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True, exist_ok=True)
    per_day = 20
    for n in range(0, entries, per_day):
        day = NOW.date() - timedelta(days=3 + n // per_day)
        lines = [f"# {day.isoformat()}", "", "## Session 09:00"]
        for i in range(n, min(n + per_day, entries)):
            topic = TOPICS[i % len(TOPICS)]
            lines += [
                f"### {9 + (i % per_day) // 4:02d}:{(i * 7) % 60:02d}",
                f"<!-- session:bench turn:{i:08x} transcript:/nonexistent/bench.jsonl -->",
                f"- the team changed the {topic} service setting number {i} after incident {i * 13}",
                f"- the agent documented why {topic} option {i} matters for latency",
            ]
        (store / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def run(
    world: PiWorld, fake: FakeModel, prompts: int, auto: bool, timings: Path
) -> dict[str, object]:
    timings.unlink(missing_ok=True)
    env = {"MEMLANE_PI_TIMINGS": str(timings), "MEMLANE_AUTO_CONTEXT": "on" if auto else "off"}
    with world.rpc(**env) as pi:
        for i in range(prompts):
            fake.agent(Reply.say("ok"))
            pi.prompt(f"What did we change in the {TOPICS[i % len(TOPICS)]} service, setting {i}?")
        pids = sidecar_pids(world.project)
        now, peak = rss(pids[0]) if pids else (0, 0)
    session = world.session_files()[-1]
    injected = sum(
        1
        for line in session.read_text().splitlines()
        if '"customType":"memlane-context"' in line.replace(" ", "")
    )
    records = [json.loads(line) for line in timings.read_text().splitlines()]
    start = [r["ms"] for r in records if r["method"] == "session_start"]
    before = [r["ms"] for r in records if r["method"] == "before_agent_start"]
    return {
        "auto_context": auto,
        "cold_start_ms": round(start[0], 1) if start else None,
        "before_agent_start_p50_ms": round(pct(before, 0.5), 2),
        "before_agent_start_p95_ms": round(pct(before, 0.95), 2),
        "before_agent_start_max_ms": round(max(before), 2),
        "prompts": len(before),
        "auto_context_injections": injected,
        "sidecar_rss_mb": now,
        "sidecar_peak_rss_mb": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--entries", type=int, default=300)
    args = parser.parse_args()
    cache = Path.home() / ".cache" / "memlane-e2e"
    pi = ensure_pi(cache)
    memlane = str(Path(sys.executable).parent / "memlane")
    with FakeModel() as fake, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = PiWorld(pi, root, fake.base_url, env_extra={"MEMLANE_HOME": str(root / "home-ml")})
        world.install_package(memlane)
        seed(world.project, args.entries)
        print(f"pi {pi.version}, {args.entries} seeded entries, {args.prompts} prompts per run")
        for auto in (False, True):
            print(json.dumps(run(world, fake, args.prompts, auto, root / "timings.jsonl")))


if __name__ == "__main__":
    main()
