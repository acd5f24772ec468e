"""``opencode run "hello"`` with memlane against the same OpenCode without it, and the
plugin's cost per hook as OpenCode runs it.

The real OpenCode (the end-to-end tests' pinned ``opencode-ai``, installed from
the npm registry once into ``$MEMLANE_E2E_CACHE`` or ``~/.cache/memlane-e2e``)
answers one prompt against the fake OpenAI-compatible model on 127.0.0.1
(``tests/fake_llm.py``). Each variant is its own isolated ``HOME`` and
``MEMLANE_HOME``:

- ``without``: OpenCode alone (the baseline);
- ``with``: memlane installed by ``memlane install opencode``'s own code (the
  plugin and the MCP server), the engine lexical-only (no embedder) and
  without an LLM, as a new user's first setup.

Each variant runs once unmeasured first (OpenCode installs ``@opencode-ai/plugin``
into its config directory the first time a plugin is configured, and the
engine starts), then the runs are interleaved, the order rotated each round. A
run's wall time is from spawning ``opencode run`` to its exit; the ratio is
the medians' (target ≤ 1.25).

Per hook: the plugin, run with ``MEMLANE_OPENCODE_TIMINGS=<file>``, appends
how long each of its hooks took inside OpenCode (``chat.message``: the session
start's answer awaited, then ``before_agent_start``; the two transforms;
``event session.idle``: the ``opencode.turn_end`` round trip, recorded only
when OpenCode has not exited first, since ``opencode run`` does not wait for
it); the engine's log gives each call's time in the engine. Target: p95 ≤ 100 ms.

    python benchmarks/bench_opencode.py [--runs 8]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from opencode_harness import OpencodeWorld, ensure_opencode

from _common import percentile, print_table, write_json
from fake_llm import FakeModel

ENGINE_CALL = re.compile(
    r"INFO \S+ (session_start|before_agent_start|opencode\.turn_end): (\d+) ms"
)
HOOKS = (
    "chat.message",
    "system.transform",
    "messages.transform",
    "event session.created",
    "event session.idle",
    "event session.deleted",
)


def cache_dir() -> Path:
    import os

    return Path(
        os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e"
    ).expanduser()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    install = ensure_opencode(cache_dir())
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
    with tempfile.TemporaryDirectory(prefix="bench-opencode-") as tmp, FakeModel() as model:
        root = Path(tmp)
        worlds = {
            "without": OpencodeWorld(install, root / "without", model.base_url, dict(env)),
            "with": OpencodeWorld(install, root / "with", model.base_url, dict(env)),
        }
        worlds["with"].install()
        timings = root / "timings.jsonl"
        try:
            for name, world in worlds.items():  # unmeasured: first start, engine start
                first = world.run("hello")
                assert first.returncode == 0, first.stderr
                print(f"warm-up {name}: {first.seconds:.2f} s", flush=True)
            walls: dict[str, list[float]] = {name: [] for name in worlds}
            order = list(worlds)
            for n in range(args.runs):
                for name in order[n % 2 :] + order[: n % 2]:
                    extra = {"MEMLANE_OPENCODE_TIMINGS": str(timings)} if name == "with" else {}
                    result = worlds[name].run("hello", **extra)
                    assert result.returncode == 0, result.stderr
                    walls[name].append(result.seconds)
                print(
                    f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items())
                )
            engine_log = worlds["with"].engine_log()
            timed = timings.read_text().splitlines() if timings.exists() else []
        finally:
            worlds["with"].stop_engine()

    base = statistics.median(walls["without"])
    start_rows = [
        {
            "variant": name,
            "runs": len(values),
            "median s": statistics.median(values),
            "p95 s": percentile(values, 95),
            "ratio": statistics.median(values) / base,
            "target": "≤ 1.25" if name == "with" else "",
        }
        for name, values in walls.items()
    ]
    hook_ms: dict[str, list[float]] = {}
    for line in timed:
        item = json.loads(line)
        hook_ms.setdefault(item["hook"], []).append(float(item["ms"]))
    hook_rows = [_row(hook, hook_ms[hook]) for hook in HOOKS if hook in hook_ms]
    engine_ms: dict[str, list[float]] = {}
    for method, ms in ENGINE_CALL.findall(engine_log):
        engine_ms.setdefault(method, []).append(float(ms))
    engine_rows = [_row(method, values) for method, values in engine_ms.items()]

    print_table('opencode run "hello": with memlane vs without', start_rows)
    print_table("plugin hooks inside OpenCode (ms; target p95 ≤ 100)", hook_rows)
    print_table("the same calls in the engine (ms, from its log, warm-up included)", engine_rows)
    result: dict[str, Any] = {
        "opencode": install.version,
        "runs": args.runs,
        "start": start_rows,
        "hooks": hook_rows,
        "engine": engine_rows,
        "raw": {"walls": walls, "hooks": hook_ms, "engine": engine_ms},
    }
    print(f"JSON: {write_json('opencode', result)}")


def _row(name: str, values: list[float]) -> dict[str, Any]:
    return {
        "hook": name,
        "n": len(values),
        "p50": statistics.median(values),
        "p95": percentile(values, 95),
        "max": max(values),
    }


if __name__ == "__main__":
    main()
