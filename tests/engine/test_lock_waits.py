"""A held lock costs a read a short wait, never the answer (issue 26, item 3).

Another process holds one of memlane's real locks until the test lets go
(tests/lock_holder.py): SQLite's write lock on the notes or sessions index,
the rebuild lock an index is opened under, the topics lock. Every read
(search from each surface, expand, status, the session's primer) must
answer while the lock is still held, say which part it could not read and
who holds it, and find everything once the lock is released. A write made
meanwhile waits its turn or lands in the markdown: nothing is lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fake_embedding import FakeEmbeddings
from helpers import Cli, FixedClock, open_memory, run_memlane, wait_for
from lock_holder import HeldLock, answered_while_held
from memlane.core.errors import MemlaneError
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.tools.dispatch import Tools
from memlane.index.sqlite.recovery import lock_path_of
from memlane.index.sqlite.sessions import sessions_path_for

pytestmark = pytest.mark.subprocess

OLD_NOTE = "- the deploy script needs AWS_PROFILE=staging before running"
NEW_NOTE = "- the staging database is called quokka"
NEW_QUERY = "quokka staging database"
NEWEST_MISSING = "the newest memories are not in these results"
# The session's own debounced index never runs: what a search finds, it indexed itself.
NEVER_MS = 3_600_000


def _seeded(project: Path, clock: FixedClock) -> Memory:
    mem = open_memory(project, clock=clock)
    mem.write(OLD_NOTE, now=datetime(2026, 11, 20, 9, 0))
    mem.sync()
    return mem


def _contents(result: Any) -> str:
    return "\n".join(hit["content"] for hit in result.details["hits"])


def _session(mem: Memory) -> Session:
    settings = replace(mem.config.session, index_debounce_ms=NEVER_MS)
    session = Session.start(mem, host="test", session_id="s1", llm=None, settings=settings)
    assert session.internals.indexer.settle(30)
    return session


@pytest.mark.parametrize("live", [True, False], ids=["in-a-session", "without-a-session"])
def test_a_search_answers_while_another_process_holds_the_index_write_lock(
    project: Path, clock: FixedClock, live: bool
) -> None:
    mem = _seeded(project, clock)
    session = _session(mem) if live else None
    tools = Tools(mem, session)
    with HeldLock("write", mem.internals.index_path) as holder:
        # Acknowledged while the index is locked: it is in the markdown.
        written = tools.call("memory_write", {"text": NEW_NOTE})
        assert "quokka" in Path(written.details["path"]).read_text()
        result = answered_while_held(
            lambda: tools.call("memory_search", {"query": NEW_QUERY}), holder
        )
        (notice,) = [n for n in result.details["notices"] if n.startswith(NEWEST_MISSING)]
        assert f"pid {holder.pid} (python" in notice  # who holds it
        assert "indexed once it is released" in notice
        assert "quokka" not in _contents(result)
        # The index as it stands still answers.
        older = answered_while_held(
            lambda: tools.call("memory_search", {"query": "deploy script AWS_PROFILE"}), holder
        )
        assert "AWS_PROFILE" in _contents(older)
    found = tools.call("memory_search", {"query": NEW_QUERY})
    assert "quokka" in _contents(found)
    assert not any(n.startswith(NEWEST_MISSING) for n in found.details.get("notices", []))
    if session is not None:
        session.shutdown()
    mem.close()


def test_a_search_answers_while_a_rebuild_holds_the_index_lock(
    project: Path, clock: FixedClock
) -> None:
    _seeded(project, clock).close()
    # A process that has not opened the index yet (a new CLI, a new engine).
    mem = open_memory(project, clock=clock)
    with HeldLock("flock", lock_path_of(mem.internals.index_path)) as holder:
        result = answered_while_held(lambda: mem.search("deploy script AWS_PROFILE"), holder)
        assert result.hits == []
        (notice,) = result.notices
        assert notice.startswith("the index is unavailable, so nothing was searched")
        assert f"pid {holder.pid} (python" in notice
        assert "holds its rebuild lock" in notice
        # A write still lands (the markdown needs no index).
        entry = answered_while_held(lambda: mem.write(NEW_NOTE), holder)
        assert "quokka" in Path(entry.path).read_text()
        # expand and status answer too, saying what they could not read.
        with pytest.raises(MemlaneError, match=f"pid {holder.pid}.*rebuild lock"):
            answered_while_held(lambda: mem.expand("0123456789abcdef"), holder)
        status = answered_while_held(mem.status, holder)
        assert any(f"pid {holder.pid}" in line for line in status.missing)
    # (the fake embeddings score low: every match is shown)
    found = [h.content for h in mem.search(NEW_QUERY, k=10, min_score=0).hits]
    assert any("quokka" in c for c in found) and any("AWS_PROFILE" in c for c in found)
    mem.close()


def test_a_search_of_everything_answers_from_the_notes_when_the_sessions_index_is_held(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    sessions_index = sessions_path_for(mem.internals.index_path)
    with HeldLock("flock", lock_path_of(sessions_index)) as holder:
        result = answered_while_held(
            lambda: mem.search("deploy script AWS_PROFILE", kind="all"), holder
        )
        assert "AWS_PROFILE" in result.hits[0].content  # the notes answered
        (notice,) = [n for n in result.notices if n.startswith("past sessions were not searched")]
        assert f"pid {holder.pid}" in notice
        cli = Cli(clock, cwd=project)
        answer = answered_while_held(
            lambda: cli("search", "--kind", "all", "deploy script AWS_PROFILE"), holder
        )
        assert answer.returncode == 0, answer.stderr
        assert "AWS_PROFILE" in answer.stdout
        assert "note: past sessions were not searched" in answer.stdout
    after = mem.search("deploy script AWS_PROFILE", kind="all")
    assert not any("past sessions" in n for n in after.notices)
    mem.close()


def test_cli_search_answers_while_the_index_is_locked(project: Path, clock: FixedClock) -> None:
    _seeded(project, clock).close()
    cli = Cli(clock, cwd=project)
    index_path = open_memory(project, clock=clock).internals.index_path
    with HeldLock("write", index_path) as holder:
        wrote = cli("write", NEW_NOTE.removeprefix("- "))
        assert wrote.returncode == 0, wrote.stderr
        answer = answered_while_held(lambda: cli("search", NEW_QUERY), holder)
        assert answer.returncode == 0, answer.stderr
        assert f"note: {NEWEST_MISSING}" in answer.stdout
        assert f"pid {holder.pid}" in answer.stdout
        assert "called quokka" not in answer.stdout
    after = cli("search", NEW_QUERY)
    assert after.returncode == 0 and "called quokka" in after.stdout
    assert NEWEST_MISSING not in after.stdout


def test_a_topic_list_answers_while_a_dream_holds_the_topics_lock(
    project: Path, clock: FixedClock
) -> None:
    from memlane.store import dream_intents
    from memlane.store.topics import LOCK_NAME

    mem = _seeded(project, clock)
    tools = Tools(mem)
    tools.call(
        "memory_topic",
        {"action": "add", "topic": "deploys", "title": "Approval", "content": "needs the RM"},
    )
    store = mem.scope.store
    with HeldLock("flock", store / LOCK_NAME) as holder:
        # A dream being applied: its intents file is there, so readers must wait for it.
        dream_intents.intents_path(store).write_text("{}\n")
        with pytest.raises(MemlaneError, match=f"being rewritten by pid {holder.pid}"):
            answered_while_held(lambda: tools.call("memory_topic", {"action": "list"}), holder)
        dream_intents.intents_path(store).unlink()
    listed = tools.call("memory_topic", {"action": "list"})
    assert [t["slug"] for t in listed.details["topics"]] == ["deploys"]
    mem.close()


def test_the_engine_runs_a_cli_search_while_the_index_is_locked(
    project: Path, clock: FixedClock
) -> None:
    # The engine's own objects, in this process: its projects (one warm memory
    # each) and the command runner a delegated `memlane search` reaches.
    from memlane.cli.main import main
    from memlane.hosts.server.commands import Commands
    from memlane.hosts.server.projects import Projects

    projects = Projects(clock=clock)
    run = Commands(projects, lambda argv, clock: main(argv, clock=clock))
    cwd = str(project)
    try:
        assert run(["write", OLD_NOTE], cwd, None)["code"] == 0
        assert "AWS_PROFILE" in run(["search", "deploy script AWS_PROFILE"], cwd, None)["stdout"]
        index_path = projects.for_dir(cwd).memory.internals.index_path
        with HeldLock("write", index_path) as holder:
            assert run(["write", NEW_NOTE], cwd, None)["code"] == 0
            answer = answered_while_held(lambda: run(["search", NEW_QUERY], cwd, None), holder)
            assert answer["code"] == 0, answer["stderr"]
            assert answer["stdout"].count(f"note: {NEWEST_MISSING}") == 1, answer["stdout"]
            assert f"pid {holder.pid}" in answer["stdout"]
            assert "called quokka" not in answer["stdout"]
        assert "called quokka" in run(["search", NEW_QUERY], cwd, None)["stdout"]
    finally:
        projects.close()


def test_the_warm_engine_answers_a_search_while_the_index_is_locked(
    project: Path, isolated_home: Path
) -> None:
    env = {"MEMLANE_EMBEDDING_PROVIDER": "none"}  # the engine and its clients: one setting
    assert _quick("write", OLD_NOTE, cwd=project, env=env).returncode == 0
    started = run_memlane("engine", "start", cwd=project, env=env)
    assert started.returncode == 0, started.stderr
    try:
        first = _quick("search", "deploy script AWS_PROFILE", cwd=project, env=env)
        assert "AWS_PROFILE" in first.stdout, first.stderr
        index_path = open_memory(project).internals.index_path
        with HeldLock("write", index_path) as holder:
            assert _quick("write", NEW_NOTE, cwd=project, env=env).returncode == 0
            answer = answered_while_held(
                lambda: _quick("search", NEW_QUERY, cwd=project, env=env), holder
            )
            assert answer.returncode == 0, answer.stderr
            assert NEWEST_MISSING in answer.stdout
            assert f"pid {holder.pid}" in answer.stdout
        # It was the engine that answered (a client that cannot reach it works alone).
        shown = run_memlane("engine", "status", "--json", cwd=project, env=env)
        engines = json.loads(shown.stdout)["engines"]
        assert [bool(e["calls"] >= 4 and e["projects"]) for e in engines] == [True], shown.stdout
        wait_for(
            lambda: "called quokka" in _quick("search", NEW_QUERY, cwd=project, env=env).stdout,
            60,
            "the note found once the lock is released",
        )
    finally:
        run_memlane("engine", "stop", "--all", cwd=project, env=env)


def _quick(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The ``memlane`` console script: it hands quick commands to a running engine."""
    script = Path(sys.executable).with_name("memlane")
    return subprocess.run(
        [str(script), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_milvus_lite_database_another_process_holds_costs_the_search_one_bounded_wait(
    project: Path, clock: FixedClock, fake_embeddings: FakeEmbeddings, tmp_path: Path
) -> None:
    pytest.importorskip("milvus_lite")
    database = tmp_path / "milvus.db"
    env = {
        "MEMLANE_EMBEDDING_PROVIDER": "openai",
        "MEMLANE_EMBEDDING_BASE_URL": fake_embeddings.base_url,
        "MEMLANE_EMBEDDING_MODEL": "fake-embed",
        "MEMLANE_INDEX_BACKEND": "milvus",
        "MEMLANE_INDEX_URI": str(database),
    }
    first = open_memory(project, clock=clock, lexical=False, **env)
    first.write(OLD_NOTE)
    first.sync()
    first.close()
    mem = open_memory(project, clock=clock, lexical=False, **env)
    with HeldLock("milvus", database) as holder:
        entry = answered_while_held(lambda: mem.write(NEW_NOTE), holder)
        assert "quokka" in Path(entry.path).read_text()
        result = answered_while_held(lambda: mem.search("deploy script AWS_PROFILE"), holder)
        assert result.hits == []
        (notice,) = result.notices
        assert notice.startswith("the index is unavailable, so nothing was searched")
        assert "is in use by another process (locked); held by pid" in notice
    # (the fake embeddings score low: every match is shown)
    found = [h.content for h in mem.search(NEW_QUERY, k=10, min_score=0).hits]
    assert any("quokka" in c for c in found) and any("AWS_PROFILE" in c for c in found)
    mem.close()
