"""Count how often a fresh Claude Code session's first memlane call is answered (a benchmark,
not a test; run it by hand).

    .venv/bin/python tests/e2e/bench_claude_mcp.py [--runs 10]

The real ``claude -p`` (plugin mode, memlane installed by its own installer)
against the scripted fake Messages API, nothing set to make Claude Code
wait for its MCP servers. Each run is a new session whose model calls
``memory_search`` first (a plain prompt, and ``/memlane:recall``, whose
forked subagent does), with no engine running (``memlane mcp`` starts it)
and with it warm. A run counts as answered when the tool's result holds the
note the project's memory has; otherwise its error (e.g. "No such tool
available") is shown. Prints a table and writes
``benchmarks/results/claude_mcp_first.json``.

Target: 10 of 10 in every row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fake_anthropic, helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from claude_harness import ClaudeWorld, ensure_claude
from test_claude_mcp_first import NOTE, QUESTION, TOOL, seed

from _common import print_table, write_json
from fake_anthropic import FakeClaude, Request, Turn

CACHE = Path(os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e")


def one(world: ClaudeWorld, model: FakeClaude, prompt: str) -> dict[str, Any]:
    model.clear()
    seen: list[Request] = []

    def answer(request: Request) -> Turn:
        seen.append(request)
        return Turn.say("Tuesday at noon.")

    model.agent(Turn.call(TOOL, query="release train"), answer)
    result = world.run(prompt)
    found = [r for r in seen[0].tool_results if r.name == TOOL] if seen else []
    answered = bool(found) and not found[0].is_error and NOTE in found[0].text
    why = "" if answered else (found[0].text if found else f"no tool result: {result.text}")
    return {"answered": answered, "seconds": result.seconds, "why": why[:200]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--memlane", metavar="EXE", help="another memlane's MCP server (a before and after)"
    )
    parser.add_argument("--src", metavar="DIR", help="with --memlane: its source directory")
    args = parser.parse_args()
    claude = ensure_claude(CACHE)
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()[0]
    with FakeClaude() as model, tempfile.TemporaryDirectory(prefix="memlane-bench-cc-") as tmp:
        world = ClaudeWorld(
            claude,
            Path(tmp),
            model.base_url,
            env_extra={"MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_LLM_PROVIDER": "none"},
        )
        world.install()
        if args.memlane:
            # Claude Code starts the other memlane's server; the hooks stay this one's.
            mcp_json = world.plugin_dir / ".mcp.json"
            servers = json.loads(mcp_json.read_text())
            servers["mcpServers"]["memlane"].update(command=args.memlane, args=["mcp"])
            mcp_json.write_text(json.dumps(servers, indent=2) + "\n")
            if args.src:
                world.env_extra["PYTHONPATH"] = args.src
        seed(world.project)
        try:
            for label, prompt in (
                ("first memory_search", QUESTION),
                ("/memlane:recall", f"/memlane:recall {QUESTION}"),
            ):
                for engine in ("none running", "warm"):
                    runs = []
                    for _ in range(args.runs):
                        if engine == "none running":
                            world.stop_engine()
                        runs.append(one(world, model, prompt))
                    failures = sorted({r["why"] for r in runs if not r["answered"]})
                    rows.append(
                        {
                            "session": label,
                            "engine": engine,
                            "answered": sum(r["answered"] for r in runs),
                            "runs": len(runs),
                            "median_s": statistics.median(r["seconds"] for r in runs),
                            "failures": failures,
                        }
                    )
        finally:
            world.stop_engine()
    load = (load_before, os.getloadavg()[0])
    print_table(
        f"Claude Code {claude.version}, a fresh session's first memlane call "
        f"(load {load[0]:.1f} before, {load[1]:.1f} after)",
        [
            {
                "session": r["session"],
                "engine": r["engine"],
                "answered": f"{r['answered']} of {r['runs']}",
                "claude -p median s": r["median_s"],
                "failures": "; ".join(r["failures"]) or "-",
            }
            for r in rows
        ],
    )
    name = "claude_mcp_first" + ("_compared" if args.memlane else "")
    path = write_json(name, {"claude": claude.version, "load": load, "rows": rows})
    print(f"\nJSON: {path}")
    return 0 if all(r["answered"] == r["runs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
