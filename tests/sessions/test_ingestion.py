"""One test per ingestion rule of the sessions layer (issue 8)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _fixtures import ClaudeSession, HashEmbedder, PiSession, Project, chat

from helpers import NOW, FixedClock, wait_for
from memlane.core.settings import SessionsSettings
from memlane.engine.project import Memory
from memlane.engine.sessions.ingest import BATCH_SIZE, EMBED_GROUP, SessionIngestor
from memlane.engine.sessions.layer import SessionsLayer, project_sources
from memlane.engine.sessions.sweep import Sweeper
from memlane.transcripts.locate import (
    Source,
    claude_project_dir_name,
    discover_sources,
    pi_session_dir_name,
)
from memlane.transcripts.model import CLAUDE_CODE, PI

HERE = Path(__file__).parent


def layer_for(agent_project: Project, embedder: HashEmbedder | None = None) -> SessionsLayer:
    return SessionsLayer(Memory.open(agent_project.root, clock=FixedClock(NOW)), embedder=embedder)


def rows(layer: SessionsLayer) -> list[tuple[str, str, str, str, int]]:
    """(role, entry id, part, text, has vector) of every stored document."""
    conn = sqlite3.connect(layer.store.path)
    try:
        return [
            (r[0], r[1], r[2], r[3], int(r[4]))
            for r in conn.execute(
                "SELECT source, entry_id, part, content, vector IS NOT NULL FROM chunks ORDER BY id"
            )
        ]
    finally:
        conn.close()


# -- sources -----------------------------------------------------------------------------


def test_pi_directory_name_is_pis_encoding() -> None:
    # session-manager.js: `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`
    assert pi_session_dir_name("/home/you/my.project") == "--home-you-my.project--"
    assert pi_session_dir_name("C:\\work\\app") == "--C--work-app--"


def test_claude_directory_name_replaces_every_non_alphanumeric() -> None:
    assert claude_project_dir_name("/home/user/code/my.app_dev") == "-home-user-code-my-app-dev"


def test_sources_are_this_projects_pi_and_claude_files(
    agent_project: Project, tmp_path: Path
) -> None:
    pi_file = PiSession().write(agent_project.pi_file())
    claude_file = ClaudeSession().write(agent_project.claude_file())
    other = agent_project.pi_dir.parent / pi_session_dir_name(str(tmp_path / "other"))
    other.mkdir(parents=True)
    PiSession().write(other / "x.jsonl")
    found = discover_sources([agent_project.root])
    assert found == sorted(
        [Source(pi_file, PI), Source(claude_file, CLAUDE_CODE)], key=lambda s: str(s.path)
    )


def test_flat_pi_session_dir_keeps_files_whose_header_names_the_project(
    agent_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    mine = PiSession()
    mine.lines[0] = mine.lines[0].replace("/home/you/project", str(agent_project.root))
    mine.write(flat / "mine.jsonl")
    PiSession().write(flat / "theirs.jsonl")  # cwd /home/you/project
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(flat))
    assert [s.path.name for s in discover_sources([agent_project.root])] == ["mine.jsonl"]


# -- documents ------------------------------------------------------------------------------


def test_user_and_assistant_messages_become_documents(agent_project: Project) -> None:
    session = PiSession("sess-1")
    u = session.user("how do we cache invoices?")
    a = session.assistant("with redis, five minute TTL")
    path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    report = layer.backfill()
    assert report.documents_added == 2 and report.embedded == 2
    docs = layer.store.docs_of(str(path))
    assert [(d.role, d.entry_id, d.session_id, d.transcript) for d in docs] == [
        ("user", u, "sess-1", str(path)),
        ("assistant", a, "sess-1", str(path)),
    ]
    assert docs[0].timestamp == "2026-08-13T14:01:00.000Z"
    assert docs[1].text == "with redis, five minute TTL"


def test_index_messages_off_keeps_messages_lexical_only(
    agent_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_SESSIONS_INDEX_MESSAGES", "false")
    session = PiSession()
    chat(session, 2)
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    assert layer.backfill().embedded == 0
    assert [r[4] for r in rows(layer)] == [0, 0, 0, 0]
    assert layer.search("redis", mode="lexical").hits


def test_compaction_and_branch_summaries_become_documents(agent_project: Project) -> None:
    session = PiSession()
    first = session.user("start the migration")
    session.assistant("migrating")
    session.compaction("we migrated the ledger to postgres", first)
    session.branch_summary(first, "tried sqlite first, abandoned", parent=first)
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    summaries = [r for r in rows(layer) if r[0] == "summary"]
    assert [r[3] for r in summaries] == [
        "we migrated the ledger to postgres",
        "tried sqlite first, abandoned",
    ]
    assert all(r[4] == 1 for r in summaries)


def test_index_summaries_off_keeps_summaries_lexical_only(
    agent_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_SESSIONS_INDEX_SUMMARIES", "0")
    claude = ClaudeSession()
    claude.user("hello")
    claude.compact("the user asked for the parser rewrite")
    claude.write(agent_project.claude_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    got = {r[0]: r[4] for r in rows(layer)}
    assert got == {"user": 1, "summary": 0}


def test_tool_io_is_stored_lexical_only_by_default(agent_project: Project) -> None:
    session = PiSession()
    session.user("run the tests")
    session.assistant("running", tool_calls=[("bash", {"command": "pytest -q zebrafish"})])
    session.tool_result("3 passed zebrafish")
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    report = layer.backfill()
    assert report.embedded == 2  # the user and assistant texts only
    tools = [r for r in rows(layer) if r[0] == "tool"]
    assert [(r[2], r[4]) for r in tools] == [("tool", 0), ("", 0)]
    hits = layer.search("zebrafish", mode="lexical").hits
    assert {h.role for h in hits} == {"tool"} and len(hits) == 2


def test_skip_tool_io_off_embeds_tool_io(
    agent_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_SESSIONS_SKIP_TOOL_IO", "false")
    session = PiSession()
    session.assistant("", tool_calls=[("read", {"path": "a.py"})])
    session.tool_result("print('hi')")
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    assert layer.backfill().embedded == 2
    assert all(r[4] == 1 for r in rows(layer))


def test_claude_code_lines_become_documents(agent_project: Project) -> None:
    claude = ClaudeSession("cc-1")
    claude.user("fix the flaky test")
    claude.assistant([{"type": "thinking", "thinking": "hmm"}], msg_id="m1")
    claude.assistant(
        [
            {"type": "text", "text": "looking at it"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
        ],
        msg_id="m1",
    )
    claude.tool_result("t1", "a.py b.py")
    claude.user("caveat", isMeta=True)
    claude.metadata({"type": "summary", "summary": "x", "leafUuid": "y"})
    path = claude.write(agent_project.claude_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    docs = layer.store.docs_of(str(path))
    assert [(d.role, d.part, d.session_id) for d in docs] == [
        ("user", "", "cc-1"),
        ("assistant", "", "cc-1"),
        ("tool", "tool", "cc-1"),
        ("tool", "", "cc-1"),
    ]
    assert docs[2].text == 'Bash({"command": "ls"})'


# -- backfill ------------------------------------------------------------------------------


def test_backfill_commits_batches_of_32_and_embeds_groups_of_them(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 150)  # 300 documents
    path = session.write(agent_project.pi_file())
    embedder = HashEmbedder()
    progress: list[tuple[int, int]] = []
    layer = layer_for(agent_project, embedder)
    generation = layer.store.meta()["generation"]
    report = layer.backfill(lambda d, t, p: progress.append((d, t)))
    assert report.documents_added == 300 and report.embedded == 300
    # One transaction per 32 documents, one embed call per EMBED_GROUP batches.
    assert report.batches == 10
    # (plus the one write that bound the embedding model)
    assert layer.store.meta()["generation"] - generation == 10 + 1
    assert embedder.calls == -(-300 // (BATCH_SIZE * EMBED_GROUP))
    assert progress[:3] == [(32, 300), (64, 300), (96, 300)] and progress[-1] == (300, 300)
    assert BATCH_SIZE == 32
    state = layer.store.source(str(path))
    assert state is not None and state.offset == path.stat().st_size


def test_rerun_adds_and_embeds_nothing(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 5)
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    again = layer.backfill()
    assert (again.documents_added, again.embedded, again.files_read) == (0, 0, 0)
    assert layer.store.count() == 10


def _worker(agent_project: Project, log: Path, delay: float) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "_backfill_worker.py"),
            str(agent_project.root),
            str(log),
            str(delay),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.subprocess
def test_backfill_resumes_after_kill_9(agent_project: Project, tmp_path: Path) -> None:
    session = PiSession()
    chat(session, 640)  # 1280 documents: 40 batches, 10 embed calls
    session.write(agent_project.pi_file())
    log1 = tmp_path / "embed1.log"
    proc = _worker(agent_project, log1, 0.15)
    wait_for(
        lambda: log1.exists() and len(log1.read_text().splitlines()) >= 3,
        30,
        "three embed calls of the worker",
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    store = layer_for(agent_project).store.path
    conn = sqlite3.connect(store)
    done = conn.execute("SELECT count(*) FROM chunks WHERE vector IS NOT NULL").fetchone()[0]
    conn.close()
    assert 0 < done < 1280

    log2 = tmp_path / "embed2.log"
    rerun = _worker(agent_project, log2, 0.0)
    out, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    result = json.loads(out)
    assert result["embedded"] == 1280 - done  # only what the killed run had not committed
    conn = sqlite3.connect(store)
    total, distinct, vectors = conn.execute(
        "SELECT count(*), count(DISTINCT transcript || entry_id || part), count(vector) FROM chunks"
    ).fetchone()
    conn.close()
    assert total == distinct == vectors == 1280


# -- incremental reads -------------------------------------------------------------------------


def test_appended_lines_are_read_from_the_stored_offset(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 3)
    path = session.write(agent_project.pi_file())
    embedder = HashEmbedder()
    layer = layer_for(agent_project, embedder)
    layer.backfill()
    before = layer.store.source(str(path))
    assert before is not None and before.offset == path.stat().st_size
    chat(session, 2, topic="kafka consumer")
    with path.open("a") as fh:  # an append, as pi writes
        fh.write("\n".join(session.lines[-4:]) + "\n")
    report = layer.backfill()
    assert (report.documents_added, report.files_rewritten) == (4, 0)
    assert embedder.embedded == 6 + 4
    assert layer.store.count() == 10


def test_truncated_file_is_read_whole_and_replaces_its_documents(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 4)
    path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    short = PiSession()
    short.user("only this remains")
    short.write(path)  # smaller than the stored offset
    report = layer.backfill()
    assert report.files_rewritten == 1
    assert [d.text for d in layer.store.docs_of(str(path))] == ["only this remains"]


def test_rewritten_first_bytes_trigger_a_whole_reread(agent_project: Project) -> None:
    session = PiSession("old-id")
    chat(session, 2)
    path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    other = PiSession("new-id")
    chat(other, 3, topic="graphql schema")  # longer, so the size did not shrink
    with path.open("r+") as fh:  # same inode, rewritten in place
        fh.write(other.text())
    report = layer.backfill()
    assert report.files_rewritten == 1
    docs = layer.store.docs_of(str(path))
    assert {d.session_id for d in docs} == {"new-id"} and len(docs) == 6


def test_a_new_inode_triggers_a_whole_reread(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 2)
    path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    tmp = path.with_suffix(".tmp")
    session.write(tmp)
    holder = path.with_suffix(".old")
    path.rename(holder)  # keep the old inode alive so the number is not reused
    tmp.rename(path)
    report = layer.backfill()
    assert report.files_rewritten == 1
    assert layer.store.count() == 4  # replaced, not duplicated
    holder.unlink()


def test_partial_last_line_is_not_consumed(agent_project: Project) -> None:
    session = PiSession()
    session.user("first question")
    path = session.write(agent_project.pi_file())
    full = path.stat().st_size
    session.assistant("a complete answer about parsers")
    last = session.lines[-1]
    with path.open("a") as fh:
        fh.write(last[:25])  # pi is mid-write
    layer = layer_for(agent_project, HashEmbedder())
    layer.backfill()
    state = layer.store.source(str(path))
    assert state is not None and state.offset == full
    assert state.garbage == 0 and layer.store.count() == 1
    with path.open("a") as fh:
        fh.write(last[25:] + "\n")
    layer.backfill()
    assert [d.role for d in layer.store.docs_of(str(path))] == ["user", "assistant"]


def test_garbage_lines_and_unknown_entries_are_counted_not_fatal(agent_project: Project) -> None:
    session = PiSession()
    session.user("before the noise")
    session.raw("{not json")
    session.raw("[1, 2]")
    session.entry("hologram", text="from the future")
    session.entry("message", message={"role": "alien", "content": "x"})
    session.model_change()
    session.assistant("after the noise")
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    report = layer.backfill()
    assert (report.garbage_lines, report.unknown_entries) == (2, 2)
    assert report.documents_added == 2
    stats = layer.stats()
    assert (stats["garbage_lines"], stats["unknown_entries"]) == (2, 2)


def test_pi_1_6_entries_are_not_counted_as_unknown(agent_project: Project) -> None:
    session = PiSession()
    session.system({"preamble": "You are an expert coding assistant"}, ["read"])
    session.user("where do deploys run")
    session.usage()
    session.assistant("on the build box")
    session.system({"skills": "<skills/>"})
    session.context_edit(session.leaf or "", {"content": "edited"})
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    report = layer.backfill()
    assert (report.garbage_lines, report.unknown_entries) == (0, 0)
    assert report.documents_added == 2
    assert layer.stats()["unknown_entries"] == 0


# -- hook and sweep ----------------------------------------------------------------------------


def test_hook_index_new_only_enqueues_and_the_worker_ingests(agent_project: Project) -> None:
    session = PiSession()
    chat(session, 2)
    path = session.write(agent_project.pi_file())
    gate = threading.Event()  # every embed waits here: no ingestion can finish before set()
    embedder = HashEmbedder(gate=gate)
    layer = layer_for(agent_project, embedder)
    try:
        layer.index_new(path)  # had it ingested on this thread, it would still be waiting
        assert not layer.flush(0)  # returned with the file still queued or in progress
        wait_for(lambda: embedder.entered == 1, 10, "the worker reaching the embed")
        assert layer.store.count() == 0 and embedder.calls == 0
    finally:
        gate.set()
    assert layer.flush(10)
    assert layer.store.count() == 4 and embedder.embedded == 4
    layer.close()


def test_sweep_tick_picks_up_files_other_sessions_wrote(agent_project: Project) -> None:
    layer = layer_for(agent_project, HashEmbedder())
    sweeper = layer.sweeper()
    assert sweeper.tick() is not None
    ClaudeSession().user("written by another agent")
    other = ClaudeSession("other")
    other.user("written by another agent about webhooks")
    other.write(agent_project.claude_file("other.jsonl"))
    report = sweeper.tick()
    assert report is not None and report.documents_added == 1
    status = layer.status()
    assert status["sweep_cycles"] == 2 and status["busy"] is False
    assert status["interval_ms"] == 30_000 and status["last_error"] is None
    assert status["last_sweep_at"] == "2026-11-30T10:00:00.000Z"  # the memory's clock


def test_sweep_interval_backs_off_while_idle_and_resets_on_activity(agent_project: Project) -> None:
    layer = layer_for(agent_project, HashEmbedder())
    sweeper = layer.sweeper()
    seen = []
    for _ in range(6):
        sweeper.tick()
        seen.append(sweeper.interval_ms)
    assert seen == [60_000, 120_000, 240_000, 300_000, 300_000, 300_000]
    session = PiSession()
    session.user("activity")
    session.write(agent_project.pi_file())
    sweeper.tick()
    assert sweeper.interval_ms == 30_000
    assert layer.status()["interval_ms"] == 30_000


def test_sweep_failure_is_recorded_and_the_next_tick_runs(agent_project: Project) -> None:
    layer = layer_for(agent_project, HashEmbedder())
    calls = {"n": 0}

    def failing_once() -> list[Source]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk on fire")
        return project_sources(layer.mem)

    # The ingestor's sources are its constructor's: a scan that fails once.
    ingestor = SessionIngestor(layer.store, None, layer.settings, failing_once)
    sweeper = Sweeper(ingestor, layer.settings, clock=layer.mem.clock)
    assert sweeper.tick() is None
    assert "disk on fire" in str(layer.status()["last_error"])
    assert sweeper.tick() is not None
    assert layer.status()["last_error"] is None and calls["n"] == 2


def test_sweeper_thread_starts_and_stops(
    agent_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_SESSIONS_SWEEP_INTERVAL_MS", "20")
    session = PiSession()
    session.user("picked up by the thread")
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    sweeper = layer.sweeper()
    thread = sweeper.start()
    try:
        wait_for(lambda: layer.store.count() == 1, 15, "the sweeper thread's first sweep")
    finally:
        sweeper.stop()
    assert sweeper.cycles >= 1 and not thread.is_alive()


def test_settings_mirror_the_reference_defaults() -> None:
    from memlane.core.config import load_config

    got = load_config(None, env={}).sessions
    assert got == SessionsSettings()
    assert (got.rrf_k, got.lex_mult, got.sem_mult) == (20, 4, 16)
    assert (got.recall_default_top_k, got.primer_top_k, got.auto_recall) == (10, 5, "heuristic")
    assert (got.auto_recall_top_k, got.auto_recall_token_budget) == (5, 600)
    assert (got.sweep_interval_ms, got.index_messages, got.skip_tool_io) == (30_000, True, True)
    env = {"MEMLANE_SESSIONS_RRF_K": "7", "PI_LCM_MEMORY_SWEEP_MS": "1000"}
    tuned = load_config(None, env=env).sessions
    assert (tuned.rrf_k, tuned.sweep_interval_ms) == (7, 1000)


def test_trace_log_has_one_line_per_event_with_pid(
    agent_project: Project, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_TRACE", "1")
    session = PiSession()
    chat(session, 1)
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    layer.sweeper().tick()
    lines = (isolated_home / "trace.log").read_text().splitlines()
    assert lines
    assert all(f"pid={os.getpid()}" in line for line in lines)
    events = [line.split()[3] for line in lines]
    assert "tick.start" in events and "sweep.start" in events and "tick.done" in events


@pytest.mark.parametrize("bulk", [True, False])
def test_a_bulk_backfill_writes_the_vector_file_for_the_next_search(
    agent_project: Project, monkeypatch: pytest.MonkeyPatch, bulk: bool
) -> None:
    from memlane.engine.sessions import ingest as ingest_mod
    from memlane.index.legs import vector_file

    monkeypatch.setattr(ingest_mod, "BULK_WRITE_VECTORS", 40 if bulk else 10_000)
    session = PiSession()
    chat(session, 30)  # 60 documents
    session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
    assert layer.backfill().embedded == 60
    path = vector_file.path_for(layer.store.path)
    assert path.is_file() is bulk  # a small pass leaves it to the next search
