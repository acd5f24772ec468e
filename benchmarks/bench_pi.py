"""memlane inside the real pi, as a user feels it: what a session costs, and what it keeps.

Runs the real pi (the end-to-end tests' cached install: ``tests/e2e/pi_harness.py``)
headless against the fake model on 127.0.0.1 (``tests/fake_llm.py``), with the
memlane pi package installed as ``memlane install pi`` installs it, and
measures, from outside (wall time of the pi process) and from the extension's
own timings (``MEMLANE_PI_TIMINGS``):

1. ``pi -p "hello"`` without memlane, with memlane and a warm engine, and with
   memlane and a cold engine (stopped before the run; the model cache kept):
   interleaved rounds, medians, p95, and the ratio of medians to pi without
   memlane (target <= 1.25x). ``floor``: a pi package of memlane's shape that
   runs nothing of memlane: its two skills, and an extension that only makes,
   at the session's end, the two calls of pi's model a capture makes there
   (the distillation and the topic extraction, what pi-memsearch's
   ``session_shutdown`` flush owes); what any package doing that costs. Beside it, per run: how long pi's own
   ``session_start`` waited (the extension only starts memlane), when
   memlane's ``session_start`` answered in the background, pi's waits in
   ``before_agent_start``, ``agent_settled`` and at shutdown.
2. A distillation that never answers (the fake model holds every
   distillation request): how long pi's shutdown takes and whether pi exits
   within ``SHUTDOWN_CAP_MS`` + ``SHUTDOWN_GRACE_MS`` (15 s + 2 s), the
   exchange still written (as a digest).
3. A new user's first session, then a search in the next one, started as
   soon as the first exits: empty ``MEMLANE_HOME`` and model cache; the index
   state when session 1 exits and when it completes, whether session 2's
   ``memory_search`` found session 1's entry, and its latency.

    python benchmarks/bench_pi.py [--rounds 5] [--hang 1] [--first 1]

The machine's load average is printed with the tables: on a shared machine
another job's engine clean-up can stop this benchmark's engine (the engine
log's restarts are counted in ``engine_starts``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # fake_llm, helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))  # pi_harness
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pi_harness import PiInstall, PiWorld, ensure_pi

from _common import median, percentile, print_table, write_json
from fake_llm import Behaviour, FakeModel, Reply, Request

MEMLANE = str(Path(sys.executable).parent / "memlane")
CACHE = Path(os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e")
SHUTDOWN_CAP_MS = 15_000
SHUTDOWN_GRACE_MS = 2_000
RUN_TIMEOUT_S = 300.0
#: How long the first-session scenario waits for session 1's index to complete.
INDEX_WAIT_S = 300.0

REDIS_PROMPT = "Which cache should the sessions service use, and why?"
REDIS_ANSWER = "Use Redis for the hot cache with 5 minute TTLs: Memcached lacks persistence."
REDIS_BULLET = "the team chose Redis for the hot cache with 5 minute TTLs"
SEARCH_QUERY = "which cache did the team choose for the sessions service"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def timings(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_ms(records: list[dict[str, Any]], method: str) -> float | None:
    found = [r["ms"] for r in records if r["method"] == method]
    return round(found[0], 1) if found else None


def engine_starts(home: Path) -> int:
    return sum(log.read_text().count(" INFO serving ") for log in (home / "engine").glob("*.log"))


def stop_engine(world: PiWorld) -> None:
    subprocess.run(
        [MEMLANE, "engine", "stop", "--all"],
        env=world.env(),
        capture_output=True,
        check=False,
        timeout=120,
    )


def make_world(
    pi: PiInstall, root: Path, fake: FakeModel, *, memlane: bool, cache: Path
) -> PiWorld:
    extra = {
        "MEMLANE_HOME": str(root / "memlane-home"),
        "MEMLANE_CACHE_DIR": str(cache),
        "MEMLANE_PI_TIMINGS": str(root / "timings.jsonl"),
    }
    world = PiWorld(pi, root, fake.base_url, env_extra=extra if memlane else {})
    if memlane:
        world.install_package(MEMLANE)
    return world


# -- 1. pi -p "hello" --------------------------------------------------------------------

SKILLS = Path(__file__).resolve().parents[1] / "integrations" / "pi" / "skills"
#: ``floor``'s extension: the session end's two model calls, nothing else.
FLOOR_EXTENSION = """
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

let saved: ExtensionContext | null = null;

export default function (pi: ExtensionAPI): void {
	pi.on("session_start", async (_event, ctx) => {
		saved = ctx;
	});
	pi.on("session_shutdown", async () => {
		const ctx = saved;
		if (!ctx || !ctx.model) return;
		for (const task of ["distil this exchange", "extract durable learnings"]) {
			const text = `${task}: the user said hello; the agent answered.`;
			await ctx.modelRegistry.complete(
				ctx.model,
				{ systemPrompt: task, messages: [{ role: "user", content: [{ type: "text", text }], timestamp: Date.now() }] },
				{ maxTokens: 256, cacheRetention: "none" } as never,
			);
		}
	});
}
"""


def make_floor(pi: PiInstall, root: Path, fake: FakeModel) -> PiWorld:
    """A world whose pi loads the ``floor`` package (see the module's docstring)."""
    package = root / "floor-package"
    (package / "extensions").mkdir(parents=True)
    (package / "extensions" / "floor.ts").write_text(FLOOR_EXTENSION)
    shutil.copytree(SKILLS, package / "skills")
    manifest = {
        "name": "memlane-floor",
        "version": "0.0.0",
        "keywords": ["pi-package"],
        "type": "module",
        "pi": {"extensions": ["./extensions/floor.ts"], "skills": ["./skills"]},
    }
    (package / "package.json").write_text(json.dumps(manifest))
    world = PiWorld(pi, root, fake.base_url, env_extra={})
    settings = world.agent_dir / "settings.json"
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data["packages"] = [str(package)]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(data))
    return world


def hello_runs(pi: PiInstall, tmp: Path, rounds: int) -> dict[str, Any]:
    cache = tmp / "model-cache"
    with FakeModel() as fake:
        worlds = {
            "without": make_world(pi, tmp / "without", fake, memlane=False, cache=cache),
            "warm": make_world(pi, tmp / "warm", fake, memlane=True, cache=cache),
            "cold": make_world(pi, tmp / "cold", fake, memlane=True, cache=cache),
            "floor": make_floor(pi, tmp / "floor", fake),
        }
        # Not measured: the model cache is derived once and both engines index their
        # store once, as on any machine that ran memlane before.
        for name in ("warm", "cold", "floor"):
            result = worlds[name].print_mode("hello", timeout_s=RUN_TIMEOUT_S)
            assert result.returncode == 0, result.stderr
        stop_engine(worlds["cold"])
        samples: dict[str, list[dict[str, Any]]] = {name: [] for name in worlds}
        for _ in range(rounds):
            for name in ("without", "cold", "warm", "floor"):
                world = worlds[name]
                if name == "cold":
                    stop_engine(world)
                record = world.root / "timings.jsonl"
                record.unlink(missing_ok=True)
                result = world.print_mode("hello", timeout_s=RUN_TIMEOUT_S)
                assert result.returncode == 0 and result.stdout.strip(), result.stderr
                spans = timings(record)
                samples[name].append(
                    {
                        "s": result.seconds,
                        "session_start_wait_ms": first_ms(spans, "session_start_wait"),
                        "session_start_answer_ms": first_ms(spans, "session_start"),
                        "before_agent_start_ms": first_ms(spans, "before_agent_start"),
                        "agent_settled_ms": first_ms(spans, "agent_settled"),
                        "shutdown_ms": first_ms(spans, "session_shutdown"),
                    }
                )
        stop_engine(worlds["warm"])
        stop_engine(worlds["cold"])
        restarts = {n: engine_starts(worlds[n].root / "memlane-home") for n in ("warm", "cold")}
    base = median([s["s"] for s in samples["without"]])
    rows = []
    for name, runs in samples.items():
        seconds = [s["s"] for s in runs]

        def mid(key: str, runs: list[dict[str, Any]] = runs) -> float | None:
            values = [s[key] for s in runs if s[key] is not None]
            return round(median(values), 1) if values else None

        rows.append(
            {
                "pi -p hello": name,
                "median_s": round(median(seconds), 2),
                "p95_s": round(percentile(seconds, 95), 2),
                "ratio": round(median(seconds) / base, 2),
                "start_wait_ms": mid("session_start_wait_ms"),
                "start_answer_ms": mid("session_start_answer_ms"),
                "before_agent_ms": mid("before_agent_start_ms"),
                "settled_ms": mid("agent_settled_ms"),
                "shutdown_ms": mid("shutdown_ms"),
            }
        )
    print_table(f"pi -p 'hello', {rounds} interleaved rounds (load {load()})", rows)
    return {"rows": rows, "samples": samples, "engine_starts": restarts}


# -- 2. a distillation that never answers ----------------------------------------------


def hang_runs(pi: PiInstall, tmp: Path, runs: int) -> dict[str, Any]:
    rows = []
    # The model answers pi's turns; a distillation memlane asks for is never answered
    # (the server wakes the held request when it stops).
    with FakeModel(distill=lambda request: Behaviour(delay_s=3600.0)) as fake:
        world = make_world(pi, tmp / "hang", fake, memlane=True, cache=tmp / "model-cache")
        daily = world.project / ".memsearch" / "memory"
        for n in range(runs):
            record = world.root / "timings.jsonl"
            record.unlink(missing_ok=True)
            prompt = f"{REDIS_PROMPT} (run {n})"
            fake.agent(Reply.say(REDIS_ANSWER))
            result = world.print_mode(prompt, timeout_s=RUN_TIMEOUT_S)
            spans = timings(record)
            shutdown = first_ms(spans, "session_shutdown")
            kept = any(prompt in f.read_text() for f in daily.glob("*.md"))
            rows.append(
                {
                    "run": n + 1,
                    "pi_exit_s": round(result.seconds, 2),
                    "shutdown_s": round(shutdown / 1000, 2) if shutdown is not None else None,
                    "cap_plus_grace_s": (SHUTDOWN_CAP_MS + SHUTDOWN_GRACE_MS) / 1000,
                    "within": shutdown is not None
                    and shutdown <= SHUTDOWN_CAP_MS + SHUTDOWN_GRACE_MS,
                    "exchange_kept": kept,
                    "rc": result.returncode,
                }
            )
        stop_engine(world)
    print_table(f"pi -p with a distillation that never answers (load {load()})", rows)
    return {"rows": rows}


# -- 3. a new user's first session, then a search in the next ----------------------------


def first_session(pi: PiInstall, tmp: Path, n: int) -> dict[str, Any]:
    root = tmp / f"first-{n}"
    with FakeModel(distill=f"- {REDIS_BULLET}") as fake:
        world = make_world(pi, root, fake, memlane=True, cache=root / "model-cache")
        state_file = world.project / ".memsearch" / ".index-state.json"
        fake.agent(Reply.say(REDIS_ANSWER))
        record = world.root / "timings.jsonl"
        first = world.print_mode(REDIS_PROMPT, timeout_s=RUN_TIMEOUT_S)
        ended = time.monotonic()
        spans = timings(record)
        at_exit = _status(state_file)
        seen: list[str] = []

        def answer(request: Request) -> Reply:
            seen.append(request.last_tool_result)
            return Reply.say("Memory says Redis.")

        fake.agent(Reply.call("memory_search", query=SEARCH_QUERY), answer)
        record.unlink(missing_ok=True)
        second = world.run("What cache did we choose last time?", timeout_s=RUN_TIMEOUT_S)
        search_ms = first_ms(timings(record), "tool:memory_search")
        deadline = ended + INDEX_WAIT_S
        while _status(state_file) != "ok" and time.monotonic() < deadline:
            time.sleep(0.5)
        complete_s = time.monotonic() - ended if _status(state_file) == "ok" else None
        stop_engine(world)
        starts = engine_starts(root / "memlane-home")
    result = seen[0] if seen else ""
    return {
        "run": n + 1,
        "session1_s": round(first.seconds, 2),
        "s1_before_agent_ms": first_ms(spans, "before_agent_start"),
        "s1_shutdown_ms": first_ms(spans, "session_shutdown"),
        "index_at_exit": at_exit,
        "index_ok_after_s": round(complete_s, 1) if complete_s is not None else None,
        "found": REDIS_BULLET in result,
        "said_building": "still being built" in result,
        "search_ms": search_ms,
        "session2_s": round(second.seconds, 2),
        "engine_starts": starts,
        "rc": f"{first.returncode}/{second.returncode}",
    }


def _status(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text()).get("status"))
    except (OSError, ValueError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved pi -p rounds")
    parser.add_argument("--hang", type=int, default=1, help="runs with a hanging distillation")
    parser.add_argument("--first", type=int, default=1, help="new users' first two sessions")
    args = parser.parse_args()
    pi = ensure_pi(CACHE)
    print(f"pi {pi.version}, load {load()}")
    out: dict[str, Any] = {"pi": pi.version, "load_start": load()}
    with tempfile.TemporaryDirectory(prefix="memlane-bench-pi-") as tmp:
        if args.rounds:
            out["hello"] = hello_runs(pi, Path(tmp), args.rounds)
        if args.hang:
            out["hang"] = hang_runs(pi, Path(tmp), args.hang)
        if args.first:
            rows = [first_session(pi, Path(tmp), n) for n in range(args.first)]
            print_table(f"a new user's first session, then a search (load {load()})", rows)
            out["first_session"] = rows
    out["load_end"] = load()
    print(f"\nJSON: {write_json('bench_pi', out)}")


if __name__ == "__main__":
    main()
