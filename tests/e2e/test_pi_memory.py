"""pi's ``/memory`` subcommands with the real pi, through the sidecar and the warm engine.

- In ``pi -p`` the answer is on stdout (pi reroutes an extension's
  ``process.stdout.write`` to stderr while it runs, so the command writes past
  that), and it comes from the engine: its log names the ``cli`` call, no
  ``memlane`` process is started for it.
- ``/memory settings <key> <value>`` writes memlane's configuration and says
  when the change applies; ``/memory settings`` prints the panel's settings
  without a UI, and with one (pi's RPC mode, where ``select`` and ``input``
  are ``extension_ui_request`` records the test answers) walks group →
  setting → value → file, and the running session follows a live setting
  from its next event.
- ``/memory reindex`` in ``pi -p`` waits for the reindex it started in the
  engine and prints its report.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall, PiWorld, RpcPi, sidecar_pids

from _transcript_builders import PiSession
from fake_llm import FakeModel
from helpers import stop_engines
from memlane.transcripts.locate import pi_session_dir_name

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")


@pytest.fixture
def world(
    pi_install: PiInstall, fake_model: FakeModel, tmp_path: Path, shared_cache: Path
) -> Iterator[PiWorld]:
    w = PiWorld(
        pi_install,
        tmp_path / "world",
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(tmp_path / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
            "MEMLANE_EMBEDDING_PROVIDER": "none",
        },
    )
    w.install_package(MEMLANE)
    yield w
    stop_engines(tmp_path / "memlane-home")
    for pid in sidecar_pids(w.project):  # never leave one behind, even on failure
        os.kill(pid, signal.SIGKILL)


def _home(world: PiWorld) -> Path:
    return Path(world.env()["MEMLANE_HOME"])


def _engine_log(world: PiWorld) -> str:
    return "".join(log.read_text() for log in (_home(world) / "engine").glob("*.log"))


def test_stats_and_on_off_print_to_stdout_and_run_in_the_engine(world: PiWorld) -> None:
    stats = world.print_mode("/memory stats")
    assert stats.returncode == 0, stats.stderr
    assert re.search(r"^documents +\d+$", stats.stdout, re.MULTILINE), (stats.stdout, stats.stderr)
    assert "documents" not in stats.stderr

    off = world.print_mode("/memory off")
    assert off.returncode == 0, off.stderr
    assert "Topic memory is off" in off.stdout, (off.stdout, off.stderr)
    assert "[topics]\nenabled = false" in (_home(world) / "config.toml").read_text()
    on = world.print_mode("/memory on")
    assert "Topic memory is on" in on.stdout, (on.stdout, on.stderr)

    # Each was memlane's own command run by the engine that serves the session.
    assert len(re.findall(r"pi cli: \d+ ms", _engine_log(world))) >= 3, _engine_log(world)


def test_settings_change_and_listing_in_print_mode(world: PiWorld) -> None:
    done = world.print_mode("/memory settings auto_context.enabled true")
    assert done.returncode == 0, done.stderr
    config = _home(world) / "config.toml"
    assert f"Set auto_context.enabled in {config}" in done.stdout, (done.stdout, done.stderr)
    assert "running sessions follow it from their next prompt" in done.stdout
    assert "[auto_context]\nenabled = true" in config.read_text()

    later = world.print_mode("/memory settings sessions.rrf_k 20")
    assert "it applies from the next session" in later.stdout, (later.stdout, later.stderr)

    listing = world.print_mode("/memory settings")
    assert listing.returncode == 0, listing.stderr
    for line in (
        "auto_context.enabled = true  (global; applies at once)",
        "sessions.rrf_k = 20  (global; applies from the next session)",
        "embedding.model = ",
        "sessions.sweep_interval_ms = ",
        "sessions.auto_recall = ",
        "Change one: /memory settings <key> <value>",
    ):
        assert line in listing.stdout, (line, listing.stdout)

    refused = world.print_mode("/memory settings search.top_k 0")
    assert refused.stdout == "", refused.stdout
    assert "search.top_k = '0' is not allowed" in refused.stderr, refused.stderr
    assert "top_k" not in config.read_text()


def _ui(pi: RpcPi, method: str, title: str = "", timeout_s: float = 120) -> dict[str, Any]:
    return pi.wait_record(
        lambda r: (
            r.get("type") == "extension_ui_request"
            and r.get("method") == method
            and str(r.get("title", r.get("message", ""))).startswith(title)
        ),
        timeout_s,
    )


def _choose(pi: RpcPi, request: dict[str, Any], starts: str) -> str:
    option = next(o for o in request["options"] if o.startswith(starts))
    pi.send({"type": "extension_ui_response", "id": request["id"], "value": option})
    return str(option)


def test_the_settings_panel_writes_the_chosen_file_and_the_session_follows(
    world: PiWorld,
) -> None:
    with world.rpc() as pi:
        pi.send({"id": "settings", "type": "prompt", "message": "/memory settings"})
        groups = _ui(pi, "select", "memlane settings")
        for title in ("Embedding model", "Search and fusion", "Sweep", "Auto-recall and primer"):
            assert title in groups["options"], groups["options"]
        _choose(pi, groups, "Auto-context")
        settings = _ui(pi, "select", "memlane settings: Auto-context")
        _choose(pi, settings, "auto_context.enabled = false  (default; applies at once)")
        value = _ui(pi, "select", "auto_context.enabled")
        assert value["options"][:2] == ["true", "false"], value
        _choose(pi, value, "true")
        where = _ui(pi, "select", "Write auto_context.enabled to")
        _choose(pi, where, "this project")
        done = _ui(pi, "notify", "Set auto_context.enabled")
        assert str(world.project / ".memlane.toml") in done["message"], done
        # The panel shows the setting's new value when it opens the group again.
        groups = _ui(pi, "select", "memlane settings")
        _choose(pi, groups, "Auto-context")
        settings = _ui(pi, "select", "memlane settings: Auto-context")
        assert any(
            o.startswith("auto_context.enabled = true  (project;") for o in settings["options"]
        ), settings["options"]
        pi.send({"type": "extension_ui_response", "id": settings["id"], "cancelled": True})
        groups = _ui(pi, "select", "memlane settings")
        pi.send({"type": "extension_ui_response", "id": groups["id"], "cancelled": True})
        pi.wait_record(lambda r: r.get("type") == "response" and r.get("id") == "settings")

        pi.command("prompt", message="/memory status")
        status = _ui(pi, "notify", "")
        while status["message"].startswith("memlane: "):  # start notices
            status = _ui(pi, "notify", "")
    assert re.search(r"auto-context +on", status["message"]), status["message"]
    assert (world.project / ".memlane.toml").read_text() == "[auto_context]\nenabled = true\n"


def test_reindex_in_print_mode_waits_for_the_engine_and_prints_its_report(
    world: PiWorld,
) -> None:
    sessions = world.agent_dir / "sessions" / pi_session_dir_name(str(world.project))
    sessions.mkdir(parents=True)
    past = PiSession("past-session")
    past.user("why is the login test flaky?")
    past.assistant("A token refresh race: the fixture reuses an expired token.")
    past.write(sessions / "past.jsonl")

    result = world.print_mode("/memory reindex")
    assert result.returncode == 0, result.stderr
    assert "rebuilding the sessions index" in result.stderr, result.stderr
    # This pi -p session's own transcript is a source too.
    assert re.match(r"reindex: \d+ of \d+ transcript\(s\) read", result.stdout), result.stdout
    assert re.search(r"[1-9]\d* document\(s\) added", result.stdout), result.stdout


def test_reindex_with_a_ui_returns_when_started_and_says_when_it_is_done(
    world: PiWorld,
) -> None:
    with world.rpc() as pi:
        pi.command("prompt", message="/memory reindex")  # answered once started
        started = _ui(pi, "notify", "memlane: rebuilding the sessions index in the background")
        assert "you are told when it is done" in started["message"]
        done = _ui(pi, "notify", "memlane: reindex: ")
        assert re.match(r"memlane: reindex: \d+ of \d+ transcript\(s\) read", done["message"])
        # The footer entry that showed its progress is gone.
        pi.wait_record(
            lambda r: (
                r.get("method") == "setStatus"
                and r.get("statusKey") == "memlane"
                and not r.get("statusText")
            ),
            60,
        )
