"""``memlane engine status|stop``: the warm engine every host talks to."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from memlane.cli.context import print_json
from memlane.core import engine_client, link
from memlane.core.errors import MemlaneError
from memlane.core.process import pid_alive

engine_app = typer.Typer(
    help=(
        "The warm engine: one background process per user that holds the model and "
        "the indexes for every agent session, MCP client and CLI call. It starts on "
        "demand and exits when idle (docs/architecture.md)."
    ),
    no_args_is_help=True,
)

#: How long ``stop`` waits for an engine to end its sessions and exit.
STOP_WAIT_S = 30.0
CALL_TIMEOUT_S = 5.0

AllOption = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every engine of this MEMLANE_HOME (one runs per setting of memlane's "
        "environment variables), not only the one this shell's variables reach.",
    ),
]


def _engines(place: link.Place, every: bool) -> list[dict[str, Any]]:
    """The engines' info files: this environment's, or every one of the home."""
    paths = sorted(Path(place.directory).glob("*.json")) if every else [Path(place.info)]
    found = []
    for path in paths:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and isinstance(info.get("pid"), int) and pid_alive(info["pid"]):
            found.append({**info, "key": path.stem})
    return found


def _live_status(place: link.Place) -> dict[str, Any] | None:
    """What the running engine says of itself (None when none answers)."""
    try:
        with engine_client.Client.open(
            place, "engine-cmd", os.getcwd(), time.monotonic() + CALL_TIMEOUT_S, start=False
        ) as client:
            result = client.call("engine.status", {}, CALL_TIMEOUT_S)
    except (link.EngineUnavailable, engine_client.EngineError):
        return None
    return result if isinstance(result, dict) else None


@engine_app.command("status")
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    every: AllOption = False,
) -> None:
    """Is the engine running: its pid, time up, memory, clients, projects and sessions."""
    place = link.Place()
    disabled = link.engine_disabled()
    engines = []
    for info in _engines(place, every):
        live = _live_status(link.Place(place.home, info["key"]))
        engines.append({**info, **(live or {}), "answering": live is not None})
    if as_json:
        print_json({"home": place.home, "key": place.key, "off": disabled, "engines": engines})
        return
    if disabled:
        typer.echo(f"the engine is off ({link.ENGINE_SWITCH_ENV}=off): every client works alone")
    if not engines:
        typer.echo(
            f"no engine is running for {place.home}"
            + ("" if every else " and this environment")
            + "; the first agent session, MCP client or `memlane engine start` starts one"
        )
        return
    for info in engines:
        _show(info, place.key)


def _show(info: dict[str, Any], own_key: str) -> None:
    mine = " (this environment's)" if info["key"] == own_key else ""
    typer.echo(f"engine {info['key']}{mine}: pid {info['pid']}, memlane {info.get('version', '?')}")
    if not info.get("answering"):
        typer.echo("  not answering (busy, or stopping); its log says more")
    else:
        rss = info.get("rss_mb")
        typer.echo(
            f"  up {info.get('uptime_s', '?')} s, idle {info.get('idle_for_s', '?')} s "
            f"(exits after {info.get('idle_s', '?')} s idle), "
            + (f"{rss:.0f} MB" if isinstance(rss, int | float) else "memory unknown")
        )
        clients = info.get("connections") or {}
        if clients:
            typer.echo("  connected: " + ", ".join(f"{k} ×{v}" for k, v in sorted(clients.items())))
        for project in info.get("projects") or []:
            sessions = project.get("sessions") or []
            where = f"  project {project.get('scope')}: "
            typer.echo(
                where
                + (
                    ", ".join(f"{s.get('host')} {str(s.get('id'))[:8]}" for s in sessions)
                    if sessions
                    else "no open session"
                )
            )
        lite = info.get("milvus_lite") or {}
        for path in lite.get("open") or []:
            typer.echo(
                f"  holds Milvus Lite {path} (let go {lite.get('linger_s', '?')} s after its "
                f"last use; opened {lite.get('opens', '?')} times)"
            )
    typer.echo(f"  socket {info.get('socket')}")
    typer.echo(f"  log {info.get('log')}")


@engine_app.command("start")
def start() -> None:
    """Start the engine for this environment now (clients start it on demand anyway)."""
    place = link.Place()
    if link.engine_disabled():
        raise MemlaneError(
            f"the engine is off ({link.ENGINE_SWITCH_ENV}=off)",
            f"unset {link.ENGINE_SWITCH_ENV} to let agents and commands share one warm engine",
        )
    try:
        with engine_client.Client.open(
            place, "engine-cmd", os.getcwd(), time.monotonic() + STOP_WAIT_S, start=True
        ) as client:
            info = client.call("engine.status", {}, CALL_TIMEOUT_S)
    except link.EngineUnavailable as exc:
        raise MemlaneError(
            f"the engine could not start: {exc}", f"its log is {place.log}"
        ) from None
    pid = info.get("pid") if isinstance(info, dict) else "?"
    typer.echo(f"engine {place.key} is running (pid {pid})")


@engine_app.command("stop")
def stop(every: AllOption = False) -> None:
    """Stop the engine: it ends every open session (their captures are written) and exits.

    An agent still running starts a new one at its next call.
    """
    place = link.Place()
    engines = _engines(place, every)
    if not engines:
        typer.echo("no engine is running" + ("" if every else " for this environment"))
        return
    for info in engines:
        pid = int(info["pid"])
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    left = engines
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [info for info in left if pid_alive(int(info["pid"]))]
    for info in engines:
        state = "still ending its sessions" if info in left else "stopped"
        typer.echo(f"engine {info['key']} (pid {info['pid']}): {state}")
    if left:
        raise MemlaneError(
            f"{len(left)} engine(s) did not exit within {STOP_WAIT_S:.0f} s",
            "they are still writing captures; `memlane engine stop` again sends a second "
            "signal, which makes them exit at once (what they acknowledged is in the capture log)",
        )


def register(app: typer.Typer) -> None:
    app.add_typer(engine_app, name="engine")
