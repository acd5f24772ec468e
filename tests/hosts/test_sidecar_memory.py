"""pi's ``/memory`` subcommands through the sidecar: memlane's own commands, run warm.

``/memory stats``, ``on|off``, ``reindex`` and ``settings`` are the CLI's
commands (``memlane sessions stats``, ``memlane memory on|off``, ``memlane
sessions reindex``, ``memlane config describe|set``), sent as the sidecar's
``cli`` request and run by the process that holds the session (the engine,
or the sidecar itself when no engine can be reached, as here), so no new
process starts. A running session follows the settings declared live from
its next event; a reindex is started (``detach``) and reported by
``cli.job`` instead of holding up the connection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_pi_relay import Relay
from test_sidecar import Client, InProcess

from _transcript_builders import PiSession
from fake_llm import FakeOpenAI
from helpers import FixedClock, engine_pids, stop_engines, wait_for
from memlane.cli.main import main
from memlane.core.clock import Clock
from memlane.core.config import KEYS
from memlane.core.paths import global_config_path
from memlane.engine.sessions.registry import close_stores
from memlane.transcripts.locate import pi_session_dir_name

READ_TIMEOUT_S = 30.0


def _full(argv: list[str], clock: Clock) -> int:
    """The whole command line, as ``memlane sidecar`` hands it to the sidecar it serves."""
    return main(argv, clock=clock)


@pytest.fixture
def sidecar(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InProcess]:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")
    client = InProcess(project, clock, full=_full)
    try:
        _start(client, project)
        yield client
    finally:
        client.close()
        close_stores()


def _start(client: Client, project: Path) -> None:
    client.result(
        "session_start",
        {"cwd": str(project), "session_id": "s-1", "transcript_path": None, "host": "pi"},
    )


def _cli(client: InProcess, *argv: str) -> dict[str, Any]:
    result: dict[str, Any] = client.result("cli", {"argv": list(argv)})
    return result


def _status(client: InProcess) -> dict[str, Any]:
    details: dict[str, Any] = client.result("tool", {"name": "memory_status", "arguments": {}})[
        "details"
    ]
    return details


def test_stats_and_the_topic_switch_are_the_clis_commands_run_by_the_session_process(
    sidecar: InProcess,
) -> None:
    stats = _cli(sidecar, "sessions", "stats")
    assert stats["code"] == 0, stats
    assert re.search(r"^documents +0$", stats["stdout"], re.MULTILINE), stats["stdout"]

    off = _cli(sidecar, "memory", "off")
    assert off["code"] == 0 and "Topic memory is off" in off["stdout"], off
    add = {"action": "add", "topic": "tooling", "title": "Installer", "content": "use uv"}
    refused = sidecar.call("tool", {"name": "memory_topic", "arguments": add})
    # The running session followed it.
    assert "topic memory is switched off" in refused["error"]["message"], refused

    on = _cli(sidecar, "memory", "on")
    assert "Topic memory is on" in on["stdout"], on
    added = sidecar.result("tool", {"name": "memory_topic", "arguments": add})
    assert "tooling" in added["text"], added


def test_a_live_setting_reaches_the_running_session_and_says_so(sidecar: InProcess) -> None:
    assert _status(sidecar)["session"]["auto_context"]["enabled"] is False

    done = _cli(sidecar, "config", "set", "auto_context.enabled", "true")
    assert done["code"] == 0, done
    assert "running sessions follow it from their next prompt" in done["stdout"], done
    assert "[auto_context]\nenabled = true" in global_config_path().read_text()
    # The session follows it at its next event (this tool call is one).
    assert _status(sidecar)["session"]["auto_context"]["enabled"] is True

    later = _cli(sidecar, "config", "set", "embedding.batch_size", "8")
    assert "it applies from the next session" in later["stdout"], later


def test_a_bad_value_is_refused_in_memlanes_words_and_nothing_is_written(
    sidecar: InProcess,
) -> None:
    refused = _cli(sidecar, "config", "set", "search.top_k", "0")
    assert refused["code"] != 0
    assert "search.top_k = '0' is not allowed" in refused["stderr"], refused
    assert "Traceback" not in refused["stderr"]
    assert not global_config_path().exists()


def test_describe_gives_the_panel_every_setting_with_when_a_change_applies(
    sidecar: InProcess, project: Path
) -> None:
    import json

    out = _cli(sidecar, "config", "describe", "--json")
    assert out["code"] == 0, out
    data = json.loads(out["stdout"])
    by_key = {item["key"]: item for item in data["keys"]}
    assert set(by_key) == set(KEYS)
    assert by_key["auto_context.enabled"]["live"] is True
    assert by_key["embedding.model"]["live"] is False
    rrf = by_key["sessions.rrf_k"]
    assert rrf["type"] == "int" and rrf["layer"] == "default" and rrf["allowed"], rrf
    assert by_key["sessions.auto_recall"]["choices"] == list(KEYS["sessions.auto_recall"].choices)
    assert data["files"]["global"] == str(global_config_path())
    assert data["files"]["project"] == str(project / ".memlane.toml")
    assert data["files"]["project_exists"] is False


def test_a_project_setting_written_by_you_stays_trusted_and_is_in_force(
    sidecar: InProcess, project: Path
) -> None:
    done = _cli(sidecar, "config", "set", "search.top_k", "8", "--project")
    assert done["code"] == 0, done
    assert (project / ".memlane.toml").read_text() == "[search]\ntop_k = 8\n"
    assert _cli(sidecar, "config", "get", "search.top_k")["stdout"].strip() == "8"
    # A file someone else changed afterwards is not read until it is trusted again.
    (project / ".memlane.toml").write_text("[search]\ntop_k = 9\n")
    again = _cli(sidecar, "config", "set", "search.min_score", "0.2", "--project")
    assert "not read until you trust it" in again["stderr"], again
    assert _cli(sidecar, "config", "get", "search.top_k")["stdout"].strip() == "5"


def test_a_global_value_a_project_file_outranks_is_said(sidecar: InProcess, project: Path) -> None:
    _cli(sidecar, "config", "set", "search.top_k", "8", "--project")
    shadowed = _cli(sidecar, "config", "set", "search.top_k", "3")
    assert "from the project layer, which outranks the global file" in shadowed["stderr"]


def _pi_transcript(project: Path, messages: int) -> Path:
    directory = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    directory = directory / pi_session_dir_name(str(project))
    directory.mkdir(parents=True, exist_ok=True)
    session = PiSession("sess-reindex")
    for i in range(messages):
        session.user(f"question {i} about the deploy pipeline")
        session.assistant(f"answer {i}: the pipeline runs on every merge")
    return session.write(directory / "sess.jsonl")


def test_a_reindex_is_started_and_reported_while_the_session_goes_on(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pi_transcript(project, messages=3)
    with FakeOpenAI() as server:
        monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "openai")
        monkeypatch.setenv("MEMLANE_EMBEDDING_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", "fake-embedder")
        monkeypatch.setenv("MEMLANE_EMBEDDING_TIMEOUT_S", str(READ_TIMEOUT_S * 4))
        server.embeddings_open.clear()  # every embedding waits: the reindex cannot finish
        client = InProcess(project, clock, full=_full)
        try:
            _start(client, project)
            started = client.result("cli", {"argv": ["sessions", "reindex"], "detach": True})
            assert started["running"] is True and started["already"] is False, started
            same = client.result("cli", {"argv": ["sessions", "reindex"], "detach": True})
            assert same["job"] == started["job"] and same["already"] is True, same
            # The connection is not held up by it: other requests are answered.
            assert _cli(client, "sessions", "stats")["code"] == 0
            running = client.result("cli.job", {"job": started["job"]})
            assert running["running"] is True and "stdout" not in running, running

            server.embeddings_open.set()

            def finished() -> bool:
                return not client.result("cli.job", {"job": started["job"]})["running"]

            wait_for(finished, READ_TIMEOUT_S, "the reindex to finish")
            done = client.result("cli.job", {"job": started["job"]})
        finally:
            server.embeddings_open.set()
            client.close()
            close_stores()
    assert done["code"] == 0, done
    assert done["stdout"].startswith("reindex: 1 of 1 transcript(s) read"), done["stdout"]
    assert done["progress"]["phase"] in ("messages", "vectors"), done
    assert done["progress"]["done"] == done["progress"]["total"] > 0, done


def test_an_unknown_job_is_an_error_that_says_what_to_do(sidecar: InProcess) -> None:
    reply = sidecar.call("cli.job", {"job": "job-999"})
    assert "no command job 'job-999'" in reply["error"]["message"], reply
    assert reply["error"]["data"]["hint"] == "start the command again"


# -- as pi runs it: ``memlane sidecar``, a relay to the warm engine ----------------------------


@pytest.fixture
def engine_home(isolated_home: Path) -> Iterator[Path]:
    yield isolated_home
    stop_engines(isolated_home)


@pytest.mark.subprocess
@pytest.mark.parametrize("engine", ["on", "off"])
def test_the_commands_run_where_the_session_is_served(
    engine_home: Path, project: Path, engine: str
) -> None:
    """Through the relay the warm engine runs them; with ``MEMLANE_ENGINE=off`` the
    sidecar serving the session in its own process does."""
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "none", "MEMLANE_ENGINE": engine}
    relay = Relay(project, env)
    try:
        _start(relay, project)
        stats = relay.result("cli", {"argv": ["sessions", "stats"]})
        assert stats["code"] == 0 and re.search(r"^documents +0$", stats["stdout"], re.M), stats
        off = relay.result("cli", {"argv": ["memory", "off"]})
        assert "Topic memory is off" in off["stdout"], off
    finally:
        assert relay.finish() == 0
    assert bool(engine_pids(engine_home)) is (engine == "on")
