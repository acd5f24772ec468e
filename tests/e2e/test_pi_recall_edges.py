"""Recall's edges in the real pi (issue 29): what a new user hits in the first minutes.

1. ``memory_search`` takes ISO 8601 bounds with a time and a zone
   (``2026-11-30T09:59:30Z``, ``...+01:00``); a bad one is an error that
   says which forms are accepted.
2. pi 1.6 writes ``system`` messages (the prompt and the tool loadout) into
   its session files: ``memory_transcript`` reads them without a note of an
   unknown entry, and ``memlane sessions stats`` counts none as unknown.
3. A note written from the terminal (``memlane write``) before a ``pi -p``
   is found by that run's first search: with an engine already running, and
   without one while the new engine's model is still loading; a Claude Code
   transcript that appeared since the last sweep is found by the first search
   of past sessions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_harness import PiInstall, PiWorld, read_session, sidecar_pids

from _transcript_builders import ClaudeSession
from fake_llm import FakeModel, Reply, Request
from helpers import engine_pids, stop_engines
from memlane.transcripts.locate import claude_dir, claude_project_dir_name

pytestmark = pytest.mark.e2e

MEMLANE = str(Path(sys.executable).parent / "memlane")
FACT = "the staging deploy needs the VPN profile called ops-tunnel"
FACT_QUERY = "staging deploy VPN profile"


def _world(
    pi_install: PiInstall, fake_model: FakeModel, root: Path, shared_cache: Path, **extra: str
) -> PiWorld:
    w = PiWorld(
        pi_install,
        root / "world",
        fake_model.base_url,
        env_extra={
            "MEMLANE_HOME": str(root / "memlane-home"),
            "MEMLANE_CACHE_DIR": str(shared_cache),
            **extra,
        },
    )
    w.install_package(MEMLANE)
    return w


def _leave_nothing_running(world: PiWorld) -> None:
    stop_engines(Path(world.env()["MEMLANE_HOME"]))
    for pid in sidecar_pids(world.project):  # never leave one behind, even on failure
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def world(
    pi_install: PiInstall, fake_model: FakeModel, tmp_path: Path, shared_cache: Path
) -> Iterator[PiWorld]:
    w = _world(pi_install, fake_model, tmp_path, shared_cache)
    distill = fake_model.distill
    yield w
    fake_model.distill = distill
    _leave_nothing_running(w)


def _memlane(world: PiWorld, *args: str) -> subprocess.CompletedProcess[str]:
    """memlane from the terminal, in the world's project, as its user runs it."""
    return subprocess.run(
        [MEMLANE, *args],
        cwd=world.project,
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _tool_then_say(fake: FakeModel, seen: list[str], *calls: Reply) -> None:
    """The model calls each tool in turn, recording every result, then answers."""

    def record(request: Request) -> Reply:
        seen.append(request.last_tool_result)
        return calls[len(seen)] if len(seen) < len(calls) else Reply.say("done")

    fake.agent(calls[0], *([record] * len(calls)))


def test_search_bounds_with_a_time_and_a_zone(world: PiWorld, fake_model: FakeModel) -> None:
    fact = "the billing export moved to the eu-west-1 bucket"
    written = _memlane(world, "write", fact)  # at the suite's clock, 2026-11-30 10:00 UTC
    assert written.returncode == 0, written.stderr
    seen: list[str] = []
    _tool_then_say(
        fake_model,
        seen,
        Reply.call(
            "memory_search",
            query="billing export bucket",
            after="2026-11-30T09:59:30Z",
            before="2026-11-30T12:00:00+01:00",
            mode="lexical",
        ),
        Reply.call("memory_search", query="billing export bucket", after="2026-11-30T11:00:00Z"),
        Reply.call("memory_search", query="billing export bucket", after="last tuesday"),
    )
    result = world.run("Where does the billing export go since this morning?")
    assert result.returncode == 0, result.stderr
    assert len(seen) == 3, seen
    inside, later, bad = seen
    assert fact in inside, inside
    assert fact not in later, later
    assert "'last tuesday' is not a date or time" in bad, bad
    assert "2026-12-03T14:12:30Z" in bad  # the accepted forms


def test_pi_1_6_system_entries_are_read_as_known(world: PiWorld, fake_model: FakeModel) -> None:
    fake_model.agent(Reply.say("Hello."))
    first = world.run("Say hello.")
    assert first.returncode == 0, first.stderr
    session_file = world.session_files()[-1]
    _, entries = read_session(session_file)
    roles = [e.get("message", {}).get("role") for e in entries if e["type"] == "message"]
    if "system" not in roles:
        pytest.skip(f"this pi ({world.pi.version}) writes no system messages")

    seen: list[str] = []
    _tool_then_say(
        fake_model, seen, Reply.call("memory_transcript", transcript_path=str(session_file))
    )
    second = world.run("Show me the last session.")
    assert second.returncode == 0, second.stderr
    assert seen and "Say hello." in seen[0], seen
    assert "unknown type" not in seen[0], seen[0]

    stats = _memlane(world, "sessions", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["unknown_entries"] == 0, stats.stdout


def test_the_first_search_of_pi_p_finds_a_note_written_from_the_terminal(
    world: PiWorld, fake_model: FakeModel
) -> None:
    """With the engine running: ``memlane write`` is served by it."""
    fake_model.agent(Reply.say("Noted."))
    warm = world.print_mode("We use Postgres for the ledger.")  # the store, index and engine
    assert warm.returncode == 0, warm.stderr
    assert engine_pids(Path(world.env()["MEMLANE_HOME"]))
    written = _memlane(world, "write", FACT)
    assert written.returncode == 0, written.stderr

    seen: list[str] = []
    _tool_then_say(fake_model, seen, Reply.call("memory_search", query=FACT_QUERY))
    run = world.print_mode("How do I reach staging for a deploy?")
    assert run.returncode == 0, run.stderr
    assert seen and FACT in seen[0], seen


def test_while_the_model_loads_the_first_search_still_finds_the_terminal_note(
    pi_install: PiInstall, fake_model: FakeModel, tmp_path: Path, shared_cache: Path
) -> None:
    """No engine running: ``memlane write`` writes the markdown only, and the
    new engine's start index run cannot embed it (the embedding endpoint holds
    every request while the run lasts), so the search indexes it itself."""
    embeddings = {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": fake_model.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embedder",
        "MEMLANE_EMBEDDING_TIMEOUT_S": "120",
    }
    world = _world(pi_install, fake_model, tmp_path, shared_cache, **embeddings)
    home = Path(world.env()["MEMLANE_HOME"])
    try:
        fake_model.agent(Reply.say("Noted."))
        warm = world.print_mode("We use Postgres for the ledger.")
        assert warm.returncode == 0, warm.stderr
        stop_engines(home)
        assert not engine_pids(home)
        written = _memlane(world, "write", FACT)
        assert written.returncode == 0, written.stderr

        seen: list[str] = []

        def record(request: Request) -> Reply:
            seen.append(request.last_tool_result)
            fake_model.embeddings_open.set()  # the model "loads" once the search answered
            return Reply.say("done")

        fake_model.embeddings_open.clear()
        fake_model.agent(Reply.call("memory_search", query=FACT_QUERY), record)
        run = world.print_mode("How do I reach staging for a deploy?")
        assert run.returncode == 0, run.stderr
        assert seen and FACT in seen[0], seen
        assert "the embedding model is still loading" in seen[0]  # lexical, and said so
    finally:
        fake_model.embeddings_open.set()
        _leave_nothing_running(world)


def test_the_first_search_of_past_sessions_finds_a_claude_code_transcript_that_appeared(
    world: PiWorld, fake_model: FakeModel
) -> None:
    fake_model.agent(Reply.say("Noted."))
    warm = world.print_mode("We use Postgres for the ledger.")
    assert warm.returncode == 0, warm.stderr
    where = claude_dir(world.env()) / "projects" / claude_project_dir_name(str(world.project))
    where.mkdir(parents=True, exist_ok=True)
    cc = ClaudeSession("cc-appeared")
    cc.turn_21("Why does the billing webhook retry three times?", "Stripe's idempotency window.")
    cc.write(where / "cc-appeared.jsonl")

    seen: list[str] = []
    _tool_then_say(
        fake_model,
        seen,
        Reply.call("memory_search", query="billing webhook retry", kind="session"),
    )
    run = world.print_mode("What did the other agent find about the webhook?")
    assert run.returncode == 0, run.stderr
    assert seen and "billing webhook retry three times" in seen[0], seen
    assert "session:cc-appeared" in seen[0]


def test_a_failing_store_command_says_only_what_is_about_the_store_command(
    world: PiWorld, fake_model: FakeModel, tmp_path: Path
) -> None:
    store_cmd = tmp_path / "store-cmd"
    store_cmd.write_text("#!/bin/sh\necho 'vault is sealed' >&2\nexit 3\n")
    store_cmd.chmod(0o755)
    seen: list[str] = []
    _tool_then_say(fake_model, seen, Reply.call("memory_search", query="anything"))
    run = world.print_mode("Search memory for anything.", MEMLANE_STORE_CMD=str(store_cmd))
    assert run.returncode == 0, run.stderr
    assert seen, "the model's memory_search got no answer"
    (answer,) = seen
    assert "store command" in answer and "vault is sealed" in answer, answer
    assert "MEMLANE_STORE_CMD" in answer  # what to do about it
    assert "PyPI" not in answer and "pip install" not in answer, answer
