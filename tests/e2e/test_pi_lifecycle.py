"""The pi package's process handling and commands, with the real pi and the real sidecar.

The sidecar starts at session start and is gone when pi exits (no orphans); a
killed sidecar is respawned lazily, at most MAX_SIDECAR_RESPAWNS (2) times,
after which the tools say memlane is unavailable; ``/memory`` shows the status;
``/recall`` starts a run that walks the ladder; ``MEMLANE_CAPTURE_MODEL``
reaches pi's registry as ``llm.complete``'s ``model``.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_harness import PiInstall, PiWorld, RpcPi, sidecar_pids

from fake_llm import FakeModel, Reply, Request
from helpers import wait_for

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")
UNAVAILABLE = "memlane is not available"


@pytest.fixture
def world(
    pi_install: PiInstall,
    fake_model: FakeModel,
    tmp_path: Path,
    shared_cache: Path,
) -> Iterator[PiWorld]:
    w = PiWorld(
        pi_install,
        tmp_path / "world",
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(tmp_path / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
        },
    )
    w.install_package(MEMLANE)
    yield w
    for pid in sidecar_pids(w.project):  # never leave one behind, even on failure
        os.kill(pid, signal.SIGKILL)


def _status_call(fake: FakeModel, seen: list[str]) -> None:
    def record(request: Request) -> Reply:
        seen.append(request.last_tool_result)
        return Reply.say("ok")

    fake.agent(Reply.call("memory_status"), record)


def test_sidecar_lives_with_the_session_and_respawns_lazily_up_to_the_cap(
    world: PiWorld, fake_model: FakeModel
) -> None:
    seen: list[str] = []
    with world.rpc() as pi:
        fake_model.agent(Reply.say("hello"))
        pi.prompt("hello")
        pids = sidecar_pids(world.project)
        assert len(pids) == 1, pids

        for respawn in (1, 2):
            os.kill(pids[0], signal.SIGKILL)
            wait_for(lambda: not sidecar_pids(world.project), 20, "the killed sidecar gone")
            _status_call(fake_model, seen)
            pi.prompt("status please")
            assert UNAVAILABLE not in seen[-1], seen[-1]
            new = sidecar_pids(world.project)
            assert len(new) == 1 and new != pids, f"respawn {respawn}: {new}"
            pids = new

        # a third death is past the cap: memory is off, pi keeps answering
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: not sidecar_pids(world.project), 20, "the killed sidecar gone")
        _status_call(fake_model, seen)
        settled = pi.prompt("status again")
        assert settled.get("aborted") is False
        assert UNAVAILABLE in seen[-1] and "died" in seen[-1], seen[-1]
        assert sidecar_pids(world.project) == []
        # memlane is installed and ran: what to do is look at it, not install it again.
        assert "Run `memlane status` in the project" in seen[-1]
        assert "PyPI" not in seen[-1] and "pip install" not in seen[-1]

    assert sidecar_pids(world.project) == []


def test_no_sidecar_outlives_pi(world: PiWorld, fake_model: FakeModel) -> None:
    fake_model.agent(Reply.say("fine"))
    result = world.run("hello there")
    assert result.returncode == 0, result.stderr
    assert sidecar_pids(world.project) == []

    with world.rpc() as pi:
        fake_model.agent(Reply.say("fine"))
        pi.prompt("hello again")
        assert len(sidecar_pids(world.project)) == 1
    wait_for(lambda: not sidecar_pids(world.project), 20, "no sidecar after pi exited")


def test_memory_command_shows_status(world: PiWorld) -> None:
    with world.rpc() as pi:
        data = pi.command("prompt", message="/memory")
        assert data.get("disposition") == "handled"
        note = pi.wait_event("extension_ui_request", timeout_s=60)
        while note.get("method") != "notify" or note.get("message", "").startswith("memlane: "):
            # skip session-start notices ("memlane: ..."), wait for the status text
            note = pi.wait_event("extension_ui_request", timeout_s=60)
    message = note["message"]
    assert str(world.project) in message or ".memsearch" in message, message


def test_memory_off_reaches_the_running_session_and_status_shows_the_topics(
    world: PiWorld, fake_model: FakeModel
) -> None:
    seen: list[str] = []

    def record(request: Request) -> Reply:
        seen.append(request.last_tool_result)
        return Reply.say("ok")

    add = {"action": "add", "topic": "tooling", "title": "Installer", "content": "use uv"}
    with world.rpc() as pi:
        fake_model.agent(Reply.say("hello"))
        pi.prompt("hello")  # the session runs
        pi.command("prompt", message="/memory off")
        assert "off" in _next_notice(pi).lower()
        fake_model.agent(Reply.call("memory_topic", **add), record)
        pi.prompt("remember that we install with uv")
        assert "switched off" in seen[-1], seen[-1]
        pi.command("prompt", message="/memory status")
        status = _next_notice(pi)
        assert re.search(r"topic memory +off", status), status
        assert "topic directory" in status and "last dream" in status, status

        pi.command("prompt", message="/memory on")
        _next_notice(pi)
        fake_model.agent(Reply.call("memory_topic", **add), record)
        pi.prompt("remember that we install with uv")
        assert "switched off" not in seen[-1] and "tooling" in seen[-1], seen[-1]
        pi.command("prompt", message="/memory status")
        status = _next_notice(pi)
    assert re.search(r"topic memory +on", status), status
    assert re.search(r"topic files +1 \(1 entries\): tooling.md", status), status
    assert re.search(r"MEMORY.md +1/200 lines", status), status


def _next_notice(pi: RpcPi) -> str:
    note = pi.wait_event("extension_ui_request", timeout_s=120)
    while note.get("method") != "notify" or note.get("message", "").startswith("memlane: "):
        note = pi.wait_event("extension_ui_request", timeout_s=120)
    return str(note["message"])


def test_memory_subcommands_reach_the_sessions_layer(world: PiWorld, fake_model: FakeModel) -> None:
    with world.rpc() as pi:
        fake_model.agent(Reply.say("The flaky login test came from a token refresh race."))
        pi.prompt("why was the login test flaky?")
        pi.command("prompt", message="/memory stats")
        stats = _next_notice(pi)
        assert "documents" in stats.lower(), stats
        pi.command("prompt", message="/memory bogus")
        assert "unknown /memory subcommand" in _next_notice(pi)


def test_recall_command_asks_the_agent_to_walk_the_ladder(
    world: PiWorld, fake_model: FakeModel
) -> None:
    start = len(fake_model.agent_requests)
    with world.rpc() as pi:
        fake_model.agent(Reply.say("Nothing found in memory."))
        pi.command("prompt", message="/recall --all kafka pinning")
        pi.wait_event("agent_settled", timeout_s=120)
    users = [t for r in fake_model.agent_requests[start:] for t in r.texts("user")]
    asked = next(t for t in users if "kafka pinning" in t)
    assert "memory_search" in asked
    assert '"all"' in asked


def test_recall_in_print_mode_runs_and_exits_cleanly(world: PiWorld, fake_model: FakeModel) -> None:
    """``pi -p "/recall …"``: the run the command asks for happens before pi exits and
    its answer is printed; a sidecar ended while its model still loads (auto-context on,
    an indexed store, a ``/recall`` that runs nothing) does not abort at exit
    ("terminate called …" on stderr; tests/hosts/test_sidecar_exit.py holds it too)."""
    import shutil
    import subprocess

    from memlane.cli.demo import fixtures_dir

    shutil.copytree(fixtures_dir() / "memory", world.project / ".memsearch" / "memory")
    indexed = subprocess.run(
        [MEMLANE, "-C", str(world.project), "index"], env=world.env(), capture_output=True
    )
    assert indexed.returncode == 0, indexed.stderr
    # Without a query nothing runs: pi exits right after the session started.
    result = world.print_mode("/recall", MEMLANE_AUTO_CONTEXT="on")
    assert "terminate called" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr

    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("Memory says the kafka client is pinned."))
    result = world.print_mode("/recall kafka pinning", MEMLANE_AUTO_CONTEXT="on")
    assert "terminate called" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Memory says the kafka client is pinned.", result.stdout
    users = [t for r in fake_model.agent_requests[start:] for t in r.texts("user")]
    assert any("kafka pinning" in t and "memory_search" in t for t in users), users


def test_pi_p_extracts_the_exchange_before_it_exits(world: PiWorld, fake_model: FakeModel) -> None:
    """The session of ``pi -p`` ends right after its one exchange: the exchange
    is still distilled and its durable learning written as a topic entry, both
    through pi's model (``llm.complete``), before pi exits."""
    import json

    from fake_llm import DEFAULT_DISTILLATION
    from memlane.engine.topics.extraction import SYSTEM_PROMPT as EXTRACT_SYSTEM

    learning = {
        "topic": "preferences",
        "title": "Package installs use uv",
        "content": "The user installs Python packages with uv, never pip.",
        "type": "user",
    }

    def answer(request: Request) -> str:
        if request.system == EXTRACT_SYSTEM:
            return json.dumps([learning])
        return "- the user asked to install Python packages with uv, never pip"

    fake_model.distill = answer
    try:
        fake_model.agent(Reply.say("Noted: uv, never pip."))
        result = world.print_mode("Always install Python packages with uv, never pip.")
    finally:
        fake_model.distill = DEFAULT_DISTILLATION
    assert result.returncode == 0, result.stderr
    store = world.project / ".memsearch" / "memory"
    topic = store / "topics" / "preferences.md"
    assert topic.is_file(), result.stderr
    assert "## Package installs use uv" in topic.read_text()
    assert "uv, never pip" in "".join(p.read_text() for p in store.glob("*.md"))


def test_capture_model_override_reaches_pi_registry(world: PiWorld, fake_model: FakeModel) -> None:
    start = len(fake_model.distill_requests)
    fake_model.agent(Reply.say("We will pin numpy below 2."))
    result = world.run("Pin numpy below 2 for now.", MEMLANE_CAPTURE_MODEL="fake/fake-big")
    assert result.returncode == 0, result.stderr
    wait_for(lambda: len(fake_model.distill_requests) > start, 30, "a distillation request")
    assert fake_model.distill_requests[start].model == "fake-big"


def test_memlane_install_pi_cli_then_uninstall(world: PiWorld, fake_model: FakeModel) -> None:
    import json
    import subprocess

    world.forget_command()
    (world.agent_dir / "settings.json").unlink()
    env = world.env()
    done = subprocess.run(
        [MEMLANE, "install", "pi"], env=env, capture_output=True, text=True, check=True
    )
    assert str(world.agent_dir / "settings.json") in done.stdout
    recorded = json.loads((world.agent_dir / "memlane.json").read_text())
    assert recorded["command"] == MEMLANE  # run from the venv, which is not on pi's PATH

    seen: list[str] = []
    _status_call(fake_model, seen)
    result = world.run("status?")
    assert result.returncode == 0, result.stderr
    assert str(world.project) in seen[-1], seen[-1]

    subprocess.run([MEMLANE, "uninstall", "pi"], env=env, capture_output=True, check=True)
    assert not (world.agent_dir / "settings.json").exists()
    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("no memory here"))
    result = world.run("hello")
    assert result.returncode == 0, result.stderr
    tools = fake_model.agent_requests[start].tool_names
    assert tools and "memory_search" not in tools  # pi's own tools, none of memlane's


def test_pi_compaction_is_forwarded(world: PiWorld, fake_model: FakeModel, tmp_path: Path) -> None:
    import json

    settings_path = world.agent_dir / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["compaction"] = {"keepRecentTokens": 1}  # let two short exchanges compact
    settings_path.write_text(json.dumps(settings))
    timings = tmp_path / "timings.jsonl"
    with world.rpc(MEMLANE_PI_TIMINGS=str(timings)) as pi:
        for text in ("first question", "second question"):
            fake_model.agent(Reply.say(f"answer to the {text}"))
            pi.prompt(text)
        pi.command("compact", timeout_s=120)
        wait_for(lambda: "session_compact" in timings.read_text(), 20, "session_compact forwarded")
        # the session goes on, with the rebuilt snapshot
        fake_model.agent(Reply.say("still here"))
        assert pi.prompt("third question").get("aborted") is False
    methods = [json.loads(line)["method"] for line in timings.read_text().splitlines()]
    # pi's own session start only starts memlane, whose start answers in the background
    assert methods[0] == "session_start_wait" and methods.count("session_start") == 1
    assert methods.count("before_agent_start") == 3
    assert methods.index("session_compact") > methods.index("agent_settled")


def test_pi_tool_schemas_match_the_sidecar_tool_layer(
    world: PiWorld, fake_model: FakeModel
) -> None:
    """pi tells its model exactly what the catalog says (tool-specs.json): each tool's
    description and the schema of what the engine's tools take."""
    from memlane.engine.shared.tool_catalog import SPECS

    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("ok"))
    assert world.run("hi").returncode == 0
    functions = {
        t["function"]["name"]: t["function"]
        for t in fake_model.agent_requests[start].tools
        if t["function"]["name"].startswith("memory_")
    }
    declared = {name: function["parameters"] for name, function in functions.items()}
    assert set(declared) == {spec.name for spec in SPECS}
    for spec in SPECS:
        assert functions[spec.name]["description"] == spec.description, spec.name
        want, got = spec.json_schema(), declared[spec.name]
        assert set(got.get("properties", {})) == set(want["properties"]), spec.name
        assert sorted(got.get("required", [])) == sorted(want["required"]), spec.name
        for name, prop in want["properties"].items():
            have = got["properties"][name]
            assert have.get("enum") == prop.get("enum"), f"{spec.name}.{name}"
            assert have.get("type") == prop["type"], f"{spec.name}.{name}"


def test_pi_loads_the_package_skills(world: PiWorld, fake_model: FakeModel) -> None:
    start = len(fake_model.agent_requests)
    fake_model.agent(Reply.say("ok"))
    assert world.run("hi").returncode == 0
    system = fake_model.agent_requests[start].system
    skills = Path(__file__).resolve().parents[2] / "integrations" / "pi" / "skills"
    for skill in ("recall", "skill-drafting"):
        assert str(skills / skill / "SKILL.md") in system, skill
    # the recall skill's description is what routes the model to it
    assert "memory_search → memory_expand → memory_transcript" in system
