"""memlane in the Codex CLI: hook overhead per event, and ``codex exec "hello"`` with and without.

1. Hooks as Codex runs them: the installed hook command (``python -I -S
   hosts/codex/hook.py``, the string ``memlane install codex`` writes) run
   through ``$SHELL -c`` as Codex 0.171 runs a command hook (seen from the
   hook: ``/bin/bash -c <command>``, its parent the codex process), with Codex-shaped
   input on the demo project (a few weeks of memory, indexed first), the
   engine warm: SessionStart (resume), UserPromptSubmit, Stop (a new turn
   appended to the session's rollout, ``--stop-gap`` apart), then
   SessionStart of a new session (what every ``codex exec`` does).
   Each measured call is preceded by one with ``MEMLANE_NO_HOOKS=1`` (the
   shell and Python start alone: the floor). Target: p95 <= 100 ms.
2. ``codex exec "hello"`` (the real binary the end-to-end tests install,
   against their fake Responses API on 127.0.0.1), interleaved: without
   memlane (the user's config.toml alone), with memlane installed (engine
   warm: one run first starts it), with its hooks exiting at once
   (``MEMLANE_NO_HOOKS=1``: the process starts alone), with its hooks only,
   with its MCP server only. Target: with / without <= 1.25.

    python benchmarks/bench_codex.py [--calls 50] [--runs 15] [--auto-context]

Writes a table and benchmarks/results/codex.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import median, percentile, print_table, write_json
from bench_sidecar import PROMPTS, prepare

REPO = Path(__file__).resolve().parent.parent


def stats(name: str, walls: list[float], floors: list[float] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "event": name,
        "calls": len(walls),
        "p50_ms": percentile(walls, 50),
        "p95_ms": percentile(walls, 95),
        "max_ms": max(walls),
    }
    if floors:
        row["floor_p50_ms"] = percentile(floors, 50)
        row["over_floor_p50_ms"] = percentile(walls, 50) - percentile(floors, 50)
    return row


class Hooks:
    """Calls the installed hook command the way Codex does."""

    def __init__(self, project: Path, env: dict[str, str], rollouts: Path) -> None:
        from memlane.hosts.codex.install import hook_command

        self.project = project
        self.env = env
        self.rollouts = rollouts
        self.command = hook_command(sys.executable)
        self.shell = os.environ.get("SHELL") or "/bin/sh"
        self.turns = 0

    def rollout(self, session: str) -> Path:
        return self.rollouts / f"rollout-2026-01-01T00-00-00-{session}.jsonl"

    def call(self, event: str, session: str, off: bool = False, **fields: Any) -> float:
        payload = {
            "session_id": session,
            "transcript_path": str(self.rollout(session)),
            "cwd": str(self.project),
            "hook_event_name": event,
            "model": "fake-model",
            "permission_mode": "default",
            **fields,
        }
        env = {**self.env, **({"MEMLANE_NO_HOOKS": "1"} if off else {})}
        started = time.perf_counter()
        subprocess.run(
            [self.shell, "-c", self.command],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            check=True,
        )
        return (time.perf_counter() - started) * 1000

    def add_turn(self, session: str) -> str:
        """One more Codex turn in the rollout: the prompt and the answer."""
        self.turns += 1
        n, turn = self.turns, f"turn-{self.turns}"
        path = self.rollout(session)
        lines = []
        if not path.exists():
            meta = {"id": session, "cwd": str(self.project)}
            lines.append({"type": "session_meta", "payload": meta})
        meta = {"internal_chat_message_metadata_passthrough": {"turn_id": turn}}
        for role, ident, text in (
            ("user", f"u{n}", f"q{n}: which queue carries retries?"),
            ("assistant", f"a{n}", f"Answer {n}: the retry queue."),
        ):
            block = "output_text" if role == "assistant" else "input_text"
            content = [{"type": block, "text": text}]
            payload = {"type": "message", "id": ident, "role": role, "content": content, **meta}
            lines.append({"type": "response_item", "payload": payload})
        with path.open("a", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps({"timestamp": "2026-01-01T00:00:00.000Z", **line}) + "\n")
        return turn


def measure_hooks(calls: int, gap_s: float, auto_context: bool) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="memlane-bench-codex-") as tmp:
        root = Path(tmp)
        project = prepare(root)
        rollouts = root / "sessions"
        rollouts.mkdir()
        env = {
            **os.environ,
            "MEMLANE_HOME": str(root / "mh"),
            "MEMLANE_AUTO_CONTEXT": "on" if auto_context else "off",
        }
        hooks = Hooks(project, env, rollouts)
        floors: list[float] = []

        def timed(walls: list[float], event: str, session: str, **fields: Any) -> None:
            floors.append(hooks.call(event, session, off=True, **fields))
            walls.append(hooks.call(event, session, **fields))

        hooks.add_turn("warm")
        hooks.call("SessionStart", "warm", source="startup")  # starts the engine
        time.sleep(gap_s * 3)  # the new session's background start (catch-up, warm-up)
        resumes: list[float] = []
        for _ in range(calls):
            timed(resumes, "SessionStart", "warm", source="resume")
        prompts: list[float] = []
        for i in range(calls):
            prompt = PROMPTS[i % len(PROMPTS)] + f" ({i})"
            timed(prompts, "UserPromptSubmit", "warm", prompt=prompt, turn_id=f"p{i}")
        stops: list[float] = []
        for _ in range(calls):
            turn = hooks.add_turn("warm")
            timed(stops, "Stop", "warm", turn_id=turn, stop_hook_active=False)
            time.sleep(gap_s)  # a model turn separates two Stops: not their background work
        starts: list[float] = []
        for i in range(min(calls, 20)):
            # What every `codex exec` does: a new session (each then left running).
            hooks.add_turn(f"new-{i}")
            timed(starts, "SessionStart", f"new-{i}", source="startup")
            time.sleep(gap_s)
        from helpers import stop_engines

        stop_engines(root / "mh")
        n = len(starts)
        return [
            stats("shell + process start only (MEMLANE_NO_HOOKS=1)", floors),
            stats("SessionStart (resume)", resumes, floors[:calls]),
            stats("UserPromptSubmit", prompts, floors[calls : 2 * calls]),
            stats(
                f"Stop (capture journaled; {gap_s:g} s apart)", stops, floors[2 * calls : 3 * calls]
            ),
            stats("SessionStart (a new session)", starts, floors[3 * calls : 3 * calls + n]),
        ]


def measure_exec(runs: int) -> list[dict[str, Any]]:
    """Interleaved ``codex exec "hello"`` runs of each variant, one world, its
    config.toml rewritten before each run (the order is the same every round)."""
    from codex_harness import CodexWorld, ensure_codex

    from fake_responses import FakeResponses

    cache = Path(os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e")
    codex = ensure_codex(cache)
    with (
        tempfile.TemporaryDirectory(prefix="memlane-bench-codex-") as tmp,
        FakeResponses(default_text="Hello!") as model,
    ):
        world = CodexWorld(codex, Path(tmp), model.base_url)
        plain = world.config.read_text()
        world.install()
        full = world.config.read_text()
        block = full[len(plain) :]
        cut = block.index("[[hooks.SessionStart]]")
        variants: dict[str, tuple[str, dict[str, str]]] = {
            "without memlane": (plain, {}),
            "memlane": (full, {}),
            "memlane, hooks exit at once": (full, {"MEMLANE_NO_HOOKS": "1"}),
            "memlane hooks only": (plain + "\n" + block[cut:], {}),
            "memlane MCP server only": (plain + block[:cut], {}),
        }
        walls: dict[str, list[float]] = {name: [] for name in variants}
        try:
            world.run("hello")  # Codex's first start, memlane's engine start: not measured
            for _ in range(runs):
                for name, (text, env) in variants.items():
                    world.config.write_text(text)
                    result = world.run("hello", **env)
                    assert result.returncode == 0, result.stderr
                    walls[name].append(result.seconds * 1000)
        finally:
            world.config.write_text(full)
            world.stop_engine()
    base = median(walls["without memlane"])
    return [
        {
            "codex exec": name,
            "runs": len(values),
            "p50_ms": median(values),
            "p95_ms": percentile(values, 95),
            "x_without": round(median(values) / base, 3),
        }
        for name, values in walls.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--stop-gap", type=float, default=1.0)
    parser.add_argument("--auto-context", action="store_true")
    parser.add_argument("--skip-exec", action="store_true", help="only the hooks")
    args = parser.parse_args()
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]
    hooks = measure_hooks(args.calls, args.stop_gap, args.auto_context)
    print_table("Codex hooks as Codex runs them (warm engine, ms)", hooks)
    runs = [] if args.skip_exec else measure_exec(args.runs)
    print_table('codex exec "hello" (ms)', runs)
    path = write_json(
        "codex",
        {
            "calls": args.calls,
            "auto_context": args.auto_context,
            "shell": os.environ.get("SHELL") or "/bin/sh",
            "hooks": hooks,
            "exec": runs,
            "targets": {"hook_p95_ms": 100, "exec_ratio": 1.25},
        },
    )
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
