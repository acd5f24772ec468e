"""``claude -p "hello"`` with memlane against the same Claude Code without it.

The real Claude Code (the end-to-end tests' pinned build, installed from the
npm registry once into ``$MEMLANE_E2E_CACHE`` or ``~/.cache/memlane-e2e``)
answers one prompt against the scripted fake Messages API on 127.0.0.1
(``tests/fake_anthropic.py``). Each variant is its own isolated ``HOME`` and
``MEMLANE_HOME``, with memlane installed by ``memlane install claude-code``'s
own code:

- ``without``: no memlane (the baseline);
- ``plugin``: the default plugin mode (hooks, MCP server, skill, command);
- ``settings``: ``--mode settings`` (hooks in settings.json, the MCP server in
  ``~/.claude.json``, the skill and command copied);
- with ``--parts``, the plugin taken apart to see what each part costs:
  ``plugin-hooks`` (its ``.mcp.json`` removed), ``plugin-mcp`` (its
  ``hooks/hooks.json`` removed), ``plugin-bare`` (both removed: the
  marketplace, manifest, skill and command alone), ``plugin-sessionend``
  (with the SessionEnd hook installs had before docs/adr/0023), and
  ``plugin-null``: the same plugin with nothing of memlane running, its
  hooks ``true`` and its MCP server a few lines of standard-library Python
  (``python -I -S``) that answers the handshake with memlane's tool list and
  nothing else. What Claude Code spends on a plugin of this shape whatever
  it runs: the floor under every plugin of memlane's shape on this machine.

Every variant runs once unmeasured first (Claude Code's first start, the
engine's start), then the runs are interleaved, the order rotated each
round. A run's wall time is from spawning ``claude -p`` to its exit. The
ratio is the variant's median over the baseline's median; the target is ≤ 1.25.
With ``--split``, Claude Code runs with ``--debug`` and the table adds what it
logged waiting for each hook, how long the MCP server took to connect, the
time from its start to the first turn (SessionStart and UserPromptSubmit
hooks, the wait for MCP servers still connecting) and its exit (from its
shutdown's start to its last line: SessionEnd hooks, MCP servers stopped).

Each run also counts the engine starts the variant's engine log shows (an
engine that exited is started again by the next hook, and that run pays for
it) and the hook failures Claude Code printed ("Hook cancelled"). Before
the warm-up run, the benchmark starts each variant's engine itself (the
same module, environment and key a hook would start it with), under a
command line that a test run's clean-up on the same machine does not take
for one of its own engines (tests/helpers.py ``engine_pids`` matches the
argument ``memlane.hosts.server``); ``--no-shield`` leaves the start to the
first hook, as for a user.

    python benchmarks/bench_claude.py [--runs 10] [--parts] [--split] [--embedding none]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core import link

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from claude_harness import ClaudeWorld, ensure_claude
from pi_harness import NpmUnavailable

from _common import percentile, print_table, write_json
from fake_anthropic import FakeClaude

TARGET_RATIO = 1.25
CACHE = Path(
    os.environ.get("MEMLANE_E2E_CACHE") or Path.home() / ".cache" / "memlane-e2e"
).expanduser()
HOOK_LINE = re.compile(
    r"Hooks: (\w+)(?::\w+)? \[.*\] (?:\(plugin \S+\) )?finished with status \d+ \((\d+)ms\)"
)
MCP_LINE = re.compile(r'MCP server "[^"]*memlane[^"]*": Successfully connected .* in (\d+)ms')
CANCELLED = "Hook cancelled"
#: The SessionEnd hook's timeout before docs/adr/0023 (its 1 s limit plus the margin).
SESSION_END_TIMEOUT_S = 3
#: Claude Code's --debug lines: ``2026-12-03T16:02:16.358Z [DEBUG] ...``.
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ", re.MULTILINE)
FIRST_TURN = "[engine] turn 1 start"
SHUTDOWN = "[uds-messaging] Shutting down"


@dataclass
class Variant:
    name: str
    world: ClaudeWorld | None = None
    walls: list[float] = field(default_factory=list)
    engine_starts: int = 0
    cancelled: int = 0
    failed_runs: int = 0
    hooks_ms: dict[str, list[int]] = field(default_factory=dict)
    mcp_ms: list[int] = field(default_factory=list)
    start_ms: list[float] = field(default_factory=list)
    exit_ms: list[float] = field(default_factory=list)

    def engine_log_starts(self) -> int:
        assert self.world is not None
        return self.world.engine_log().count(" serving ")


#: ``plugin-null``'s MCP server: the handshake, the tool list from a file, nothing else.
NULL_SERVER = """
import json, sys
tools = json.load(open(sys.argv[1]))
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "memlane", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "ping":
        result = {}
    else:
        err = {"code": -32601, "message": "Method not found"}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": err}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def make_null(world: ClaudeWorld) -> None:
    """Keep the plugin's shape, run nothing of memlane (``plugin-null``)."""
    from memlane.hosts.mcp.tools import tool_definitions

    hooks = world.plugin_dir / "hooks" / "hooks.json"
    data = json.loads(hooks.read_text())
    for groups in data["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = "true"
    hooks.write_text(json.dumps(data))
    server = world.plugin_dir / "null_server.py"
    server.write_text(NULL_SERVER)
    tools = world.plugin_dir / "null_tools.json"
    tools.write_text(json.dumps(tool_definitions()))
    mcp = world.plugin_dir / ".mcp.json"
    config = json.loads(mcp.read_text())
    for entry in config["mcpServers"].values():
        entry["command"] = sys.executable
        entry["args"] = ["-I", "-S", str(server), str(tools)]
    mcp.write_text(json.dumps(config))


def make_world(
    name: str, claude: Any, root: Path, base_url: str, env: dict[str, str]
) -> ClaudeWorld:
    world = ClaudeWorld(claude, root / name, base_url, env_extra=env)
    if name == "without":
        return world
    world.install(mode="settings" if name == "settings" else "plugin")
    if name in ("plugin-hooks", "plugin-bare"):
        (world.plugin_dir / ".mcp.json").unlink()
    if name in ("plugin-mcp", "plugin-bare"):
        shutil.rmtree(world.plugin_dir / "hooks")
    if name == "plugin-sessionend":  # what installs before docs/adr/0023 had
        hooks = world.plugin_dir / "hooks" / "hooks.json"
        data = json.loads(hooks.read_text())
        stop = data["hooks"]["Stop"][0]["hooks"][0]
        data["hooks"]["SessionEnd"] = [{"hooks": [{**stop, "timeout": SESSION_END_TIMEOUT_S}]}]
        hooks.write_text(json.dumps(data))
    if name == "plugin-null":
        make_null(world)
    return world


def shield_engine(world: ClaudeWorld) -> None:
    """Start *world*'s engine as its first hook would, but under ``python -c``."""
    env = {k: v for k, v in world.env().items() if k not in link.SESSION_ENV}
    place = link.Place(os.path.realpath(world.memlane_home), link.engine_key(env))
    link.make_private_dir(place.directory)
    code = "import runpy; runpy.run_module(%r, run_name='__main__', alter_sys=True)"
    argv = [sys.executable, "-c", code % link.ENGINE_MODULE]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
    deadline = time.monotonic() + 120
    while (sock := link.connect(place, 1.0)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the engine did not start: see {place.log}")
        time.sleep(0.1)
    sock.close()


def run_once(variant: Variant, prompt: str, debug: Path | None) -> None:
    world = variant.world
    assert world is not None
    starts = variant.engine_log_starts() if variant.name != "without" else 0
    args = ["--debug", "--debug-file", str(debug)] if debug else []
    result = world.run(prompt, *args)
    if result.returncode != 0 or result.result.get("is_error"):
        variant.failed_runs += 1
        print(f"  {variant.name}: claude -p failed: {result.stderr.strip()[:300]}", flush=True)
    variant.walls.append(result.seconds)
    variant.cancelled += result.stderr.count(CANCELLED)
    if variant.name != "without":
        variant.engine_starts += variant.engine_log_starts() - starts
    if debug and debug.exists():
        text = debug.read_text(encoding="utf-8", errors="replace")
        for event, ms in HOOK_LINE.findall(text):
            variant.hooks_ms.setdefault(event, []).append(int(ms))
        variant.mcp_ms += [int(ms) for ms in MCP_LINE.findall(text)]
        start, first_turn, shutdown, end = phases(text)
        if first_turn is not None:
            variant.start_ms.append((first_turn - start) * 1000)
        if shutdown is not None:
            variant.exit_ms.append((end - shutdown) * 1000)
        debug.unlink()


def phases(text: str) -> tuple[float, float | None, float | None, float]:
    """From Claude Code's debug log: its first line, the first turn's start, the start of
    its shutdown and its last line (seconds)."""
    from datetime import datetime

    def at(line_start: int) -> float:
        found = STAMP.match(text, line_start)
        assert found is not None
        return datetime.fromisoformat(found.group(1)).timestamp()

    stamps = [m.start() for m in STAMP.finditer(text)]
    first_turn = shutdown = None
    for offset in stamps:
        line = text[offset : text.find("\n", offset)]
        if first_turn is None and FIRST_TURN in line:
            first_turn = at(offset)
        if shutdown is None and SHUTDOWN in line:
            shutdown = at(offset)
    return at(stamps[0]), first_turn, shutdown, at(stamps[-1])


def rows_of(variants: list[Variant], split: bool) -> list[dict[str, Any]]:
    base = statistics.median(variants[0].walls)
    rows = []
    for v in variants:
        median = statistics.median(v.walls)
        row: dict[str, Any] = {
            "variant": v.name,
            "runs": len(v.walls),
            "median s": median,
            "p95 s": percentile(v.walls, 95),
            "ratio": median / base,
            "target": "" if v.name == "without" else f"<= {TARGET_RATIO}",
            "ok": "" if v.name == "without" else ("yes" if median / base <= TARGET_RATIO else "NO"),
            "engine starts": v.engine_starts,
            "hook cancelled": v.cancelled,
        }
        if split:
            for event in ("SessionStart", "UserPromptSubmit", "Stop"):
                values = v.hooks_ms.get(event, [])
                row[f"{event} ms"] = statistics.median(values) if values else ""
            row["MCP connect ms"] = statistics.median(v.mcp_ms) if v.mcp_ms else ""
            row["to 1st turn ms"] = statistics.median(v.start_ms) if v.start_ms else ""
            row["exit ms"] = statistics.median(v.exit_ms) if v.exit_ms else ""
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs per variant")
    parser.add_argument("--prompt", default="hello")
    parser.add_argument("--modes", default="plugin,settings", help="plugin, settings or both")
    parser.add_argument("--parts", action="store_true", help="also the plugin taken apart")
    parser.add_argument("--split", action="store_true", help="run with --debug: hook and MCP times")
    parser.add_argument(
        "--embedding", default="", help="embedding.provider for memlane (default: the default)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the worlds' directory")
    parser.add_argument(
        "--no-shield", action="store_true", help="let the first hook start each engine"
    )
    args = parser.parse_args()
    try:
        claude = ensure_claude(CACHE)
    except NpmUnavailable as exc:
        print(f"bench_claude: skipped: {exc}")
        return 0
    names = ["without", *[m for m in args.modes.split(",") if m]]
    if args.parts:
        names += ["plugin-hooks", "plugin-mcp", "plugin-bare", "plugin-sessionend", "plugin-null"]
    env = {"MEMLANE_EMBEDDING_PROVIDER": args.embedding} if args.embedding else {}
    root = Path(tempfile.mkdtemp(prefix="memlane-bench-claude-"))
    load_before = os.getloadavg()
    variants = [Variant(name) for name in names]
    try:
        with FakeClaude(default_text="Hello.") as model:
            for v in variants:
                v.world = make_world(v.name, claude, root, model.base_url, env)
                if v.name not in ("without", "plugin-null") and not args.no_shield:
                    shield_engine(v.world)
                v.world.run("warm up")  # Claude Code's first start; the engine's start
            for i in range(args.runs):
                shift = i % len(variants)
                for v in variants[shift:] + variants[:shift]:
                    debug = root / f"debug-{v.name}.txt" if args.split else None
                    run_once(v, args.prompt, debug)
                print(f"round {i + 1}/{args.runs} done (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for v in variants:
            if v.world is not None and v.name != "without":
                v.world.stop_engine()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()
    rows = rows_of(variants, args.split)
    title = (
        f'claude -p "{args.prompt}" with memlane vs without ({claude.version}, fake API on '
        f"127.0.0.1; {args.runs} interleaved runs; load {load_before[0]:.1f} -> {load_after[0]:.1f})"
    )
    print_table(title, rows)
    result = {
        "claude_version": claude.version,
        "prompt": args.prompt,
        "runs": args.runs,
        "embedding": args.embedding or "default",
        "shielded_engines": not args.no_shield,
        "load_before": load_before,
        "load_after": load_after,
        "target_ratio": TARGET_RATIO,
        "rows": rows,
        "walls": {v.name: v.walls for v in variants},
        "hooks_ms": {v.name: v.hooks_ms for v in variants},
        "mcp_connect_ms": {v.name: v.mcp_ms for v in variants},
        "to_first_turn_ms": {v.name: v.start_ms for v in variants},
        "exit_ms": {v.name: v.exit_ms for v in variants},
    }
    print(f"JSON: {write_json('claude', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
