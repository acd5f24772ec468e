"""memlane in the Codex CLI: hook overhead per event, and ``codex exec "hello"`` with and without.

1. Hooks as Codex runs them: ``memlane install codex`` writes each hook as a
   call of the MCP server's unlisted ``codex_hook`` tool (``type =
   "mcp_tool"``), so a hook is one JSON-RPC round trip to the ``memlane mcp``
   process Codex already runs. Here that server is started with the command
   and ``env`` install writes, and each hook is called as Codex calls it (the
   input template filled in from Codex-shaped input) on the demo project (a
   few weeks of memory, indexed first), the engine warm: SessionStart
   (resume), UserPromptSubmit, Stop (a new turn appended to the session's
   rollout, ``--stop-gap`` apart), then SessionStart of a new session (what
   every ``codex exec`` does). Each measured call follows a ``ping`` on the
   same pipe (the transport alone: the floor). Then what one ``codex exec``
   does, each run with a server of its own: start it, SessionStart of a new
   session, the prompt's UserPromptSubmit at once, Stop, close it (a new
   session's background start, docs/adr/0047, is what its first prompt
   would otherwise share the cores with). Target: p95 <= 100 ms.
2. ``codex exec "hello"`` (the real binary the end-to-end tests install,
   against their fake Responses API on 127.0.0.1), interleaved: without
   memlane (the user's config.toml alone), with memlane installed (engine
   warm: one run first starts it), with its hooks answering at once
   (``MEMLANE_NO_HOOKS=1`` in the server's env: Codex's round trips alone),
   with its MCP server only (no hooks). Target: with / without <= 1.25.
   ``--run-gap`` seconds pass between two runs, as between two commands a
   person types: after its Codex exits, a run's session ends in the engine and
   its capture is written and indexed; back to back (``--run-gap 0``) that
   work lands on the next run, whichever variant it is.

    python benchmarks/bench_codex.py [--calls 50] [--runs 15] [--run-gap 1] [--auto-context]

memlane's bytecode is written first, as an install writes it.

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
from _common import as_installed, median, percentile, print_table, write_json
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
    """The ``memlane mcp`` server as Codex starts it, its hook tool called as Codex calls it."""

    def __init__(self, project: Path, env: dict[str, str], rollouts: Path) -> None:
        from memlane.hosts.codex.install import HOOKS, hook_input, mcp_command
        from memlane.hosts.mcp.config import server_env

        self.project = project
        self.rollouts = rollouts
        self.templates = {event: hook_input(fields) for event, _, _, fields in HOOKS}
        self.turns = 0
        self.ids = 0
        server_environ = {"HOME": env["HOME"], "PATH": env.get("PATH", "/usr/bin:/bin")}
        server_environ.update(server_env(env))
        self.server = subprocess.Popen(
            mcp_command(python=sys.executable),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_environ,
            cwd=project,
        )
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"},
        }
        self.request("initialize", init)
        self.notify("notifications/initialized")
        self.request("tools/list", {})

    def notify(self, method: str) -> None:
        assert self.server.stdin is not None
        self.server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.server.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.server.stdin is not None and self.server.stdout is not None
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.server.stdin.write(json.dumps(message).encode() + b"\n")
        self.server.stdin.flush()
        answer: dict[str, Any] = json.loads(self.server.stdout.readline())
        assert answer.get("id") == self.ids, answer
        return answer

    def close(self) -> None:
        """Hang up as Codex does at its exit (again: nothing)."""
        assert self.server.stdin is not None
        if self.server.stdin.closed:
            return
        self.server.stdin.close()
        self.server.wait(30)

    def rollout(self, session: str) -> Path:
        return self.rollouts / f"rollout-2026-01-01T00-00-00-{session}.jsonl"

    def floor(self) -> float:
        started = time.perf_counter()
        self.request("ping", {})
        return (time.perf_counter() - started) * 1000

    def call(self, event: str, session: str, **fields: Any) -> float:
        payload = {
            "session_id": session,
            "transcript_path": str(self.rollout(session)),
            "cwd": str(self.project),
            "hook_event_name": event,
            "model": "fake-model",
            "permission_mode": "default",
            **fields,
        }
        # What Codex sends: the template's placeholders replaced by the input's values.
        arguments = {name: payload[name] for name in self.templates[event]}
        started = time.perf_counter()
        answer = self.request("tools/call", {"name": "codex_hook", "arguments": arguments})
        took = (time.perf_counter() - started) * 1000
        assert "result" in answer and not answer["result"].get("isError"), answer
        return took

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
            floors.append(hooks.floor())
            walls.append(hooks.call(event, session, **fields))

        try:
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
                fields = {"turn_id": turn, "stop_hook_active": False}
                timed(stops, "Stop", "warm", last_assistant_message="the retry queue", **fields)
                time.sleep(gap_s)  # a model turn separates two Stops: not their background work
            starts: list[float] = []
            for i in range(min(calls, 20)):
                # What every `codex exec` does: a new session (each then left running).
                hooks.add_turn(f"new-{i}")
                timed(starts, "SessionStart", f"new-{i}", source="startup")
                time.sleep(gap_s)
            hooks.close()
            time.sleep(gap_s * 3)  # the engine ends this server's sessions before the runs
            runs = exec_like_runs(project, env, rollouts, min(calls, 20), gap_s)
        finally:
            hooks.close()
            from helpers import stop_engines

            stop_engines(root / "mh")
        n = len(starts)
        return [
            stats("JSON-RPC round trip only (ping)", floors),
            stats("SessionStart (resume)", resumes, floors[:calls]),
            stats("UserPromptSubmit", prompts, floors[calls : 2 * calls]),
            stats(
                f"Stop (capture journaled; {gap_s:g} s apart)", stops, floors[2 * calls : 3 * calls]
            ),
            stats("SessionStart (a new session)", starts, floors[3 * calls : 3 * calls + n]),
            *(stats(f"codex exec's {event} (a server per run)", runs[event]) for event in runs),
        ]


def exec_like_runs(
    project: Path, env: dict[str, str], rollouts: Path, runs: int, gap_s: float
) -> dict[str, list[float]]:
    """The hooks of *runs* ``codex exec``-like sessions, each with a new server."""
    walls: dict[str, list[float]] = {"SessionStart": [], "UserPromptSubmit": [], "Stop": []}
    for i in range(runs):
        hooks = Hooks(project, env, rollouts)
        try:
            session = f"exec-{i}"
            hooks.add_turn(session)
            walls["SessionStart"].append(hooks.call("SessionStart", session, source="startup"))
            prompt = PROMPTS[i % len(PROMPTS)]
            walls["UserPromptSubmit"].append(
                hooks.call("UserPromptSubmit", session, prompt=prompt, turn_id=f"x{i}")
            )
            turn = hooks.add_turn(session)
            fields = {"turn_id": turn, "stop_hook_active": False}
            walls["Stop"].append(
                hooks.call("Stop", session, last_assistant_message="the retry queue", **fields)
            )
        finally:
            hooks.close()
        time.sleep(gap_s)  # the session ends once its server is gone, as after codex exits
    return walls


def measure_exec(runs: int, gap_s: float) -> list[dict[str, Any]]:
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
        env_table = "[mcp_servers.memlane.env]\n"
        hooks_off = full.replace(env_table, env_table + 'MEMLANE_NO_HOOKS = "1"\n')
        variants: dict[str, tuple[str, dict[str, str]]] = {
            "without memlane": (plain, {}),
            "memlane": (full, {}),
            "memlane, hooks answer at once": (hooks_off, {}),
            "memlane MCP server only (no hooks)": (plain + block[:cut], {}),
        }
        walls: dict[str, list[float]] = {name: [] for name in variants}
        try:
            world.run("hello")  # Codex's first start, memlane's engine start: not measured
            for _ in range(runs):
                for name, (text, env) in variants.items():
                    world.config.write_text(text)
                    time.sleep(gap_s)  # the previous run's session ends meanwhile
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
    parser.add_argument("--run-gap", type=float, default=1.0)
    parser.add_argument("--auto-context", action="store_true")
    parser.add_argument("--skip-exec", action="store_true", help="only the hooks")
    args = parser.parse_args()
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]
    as_installed()
    hooks = measure_hooks(args.calls, args.stop_gap, args.auto_context)
    print_table("Codex hooks as Codex runs them (warm engine, ms)", hooks)
    runs = [] if args.skip_exec else measure_exec(args.runs, args.run_gap)
    print_table('codex exec "hello" (ms)', runs)
    path = write_json(
        "codex",
        {
            "calls": args.calls,
            "run_gap_s": args.run_gap,
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
