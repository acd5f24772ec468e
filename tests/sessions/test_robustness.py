"""The sessions store survives a damaged file, and the rewrite check sees
in-place rewrites that keep the first bytes (review findings 1 and 2)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _fixtures import HashEmbedder, PiSession, Project, chat

import memlane.engine.sessions as engine_sessions
from memlane.engine.memory import Memory
from memlane.engine.sessions import (
    HEAD_BYTES,
    TAIL_BYTES,
    FileRead,
    SessionsLayer,
    Source,
    close_stores,
    read_source,
)
from memlane.index import schema
from memlane.index.sessions import SESSIONS_SCHEMA_VERSION, SessionStore
from memlane.transcripts.model import PI

HERE = Path(__file__).parent


def layer_for(project: Project, embedder: HashEmbedder | None = None) -> SessionsLayer:
    return SessionsLayer(Memory.open(project.root), embedder=embedder)


def corrupt(path: Path) -> None:
    """What the reviewer did: ``head -c 5000 /dev/urandom > file``."""
    path.write_bytes(os.urandom(5000))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def quarantined(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.glob(path.name + ".corrupt-*") if "-wal" not in p.name)


def one_session(project: Project) -> Path:
    session = PiSession("sess-robust")
    session.user("where do the invoice exports go")
    session.assistant("the invoice exporter writes csv files to the exports bucket")
    return session.write(project.pi_file())


# -- 1. a damaged file -------------------------------------------------------------------


def test_a_damaged_file_is_moved_aside_rebuilt_and_read_again(project: Project) -> None:
    one_session(project)
    layer = layer_for(project)
    assert layer.backfill().documents_added == 2
    path = layer.store.path
    close_stores()
    corrupt(path)

    layer = layer_for(project)  # opening the store finds the damage
    assert len(quarantined(path)) == 1
    status = layer.status()
    assert "damaged and rebuilt" in status["notice"]
    assert "memlane sessions backfill" in status["notice"]
    assert "notice" not in layer.status()  # said once

    # Every offset went with the file: the next pass reads it all again.
    report = layer.backfill()
    assert report.documents_added == 2 and report.files_rewritten == 0
    result = layer.search("invoice csv", mode="lexical")
    assert result.hits and "csv" in result.hits[0].text


def test_damage_found_by_a_later_call_rebuilds_and_the_notice_says_reread(
    project: Project,
) -> None:
    one_session(project)
    layer = layer_for(project)
    layer.backfill()
    path = layer.store.path
    layer.store.close()  # the next call reopens and meets the damage there
    corrupt(path)

    report = layer.backfill()  # the ingestor's first read rebuilds: all read again
    assert report.documents_added == 2
    assert any("read again from the transcripts" in n for n in report.notices)
    result = layer.search("invoice", mode="lexical")
    assert result.hits
    assert any("read again from the transcripts" in n for n in result.notices)
    assert not layer.search("invoice", mode="lexical").notices  # popped once shown
    assert len(quarantined(path)) == 1


def test_damage_met_by_a_query_rebuilds_and_runs_it_again(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "p.sessions.sqlite")
    calls: list[int] = []

    def op(conn: sqlite3.Connection) -> int:
        calls.append(1)
        if len(calls) == 1:  # what a torn page answers mid-query
            raise sqlite3.DatabaseError("database disk image is malformed")
        return int(conn.execute("SELECT count(*) FROM sources").fetchone()[0])

    assert store._run(op) == 0 and len(calls) == 2
    assert store.rebuilds == 1 and store.rebuilt_reason is not None
    assert "malformed" in store.rebuilt_reason and len(quarantined(store.path)) == 1
    store.close()


def test_a_rebuild_in_the_middle_of_a_pass_reads_its_files_again(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        session = PiSession(f"sess-{name}")
        chat(session, 3, topic=f"topic {name}")
        session.write(project.pi_file(name))
    mem = Memory.open(project.root)
    store = engine_sessions.open_store(mem)
    ingestor = engine_sessions.SessionIngestor(
        store,
        None,
        mem.config.sessions,
        lambda: engine_sessions.project_sources(mem),
        batch_size=2,
    )
    commit = store.commit
    commits: list[int] = []

    def damaged_on_the_third(batch: object) -> int:
        commits.append(1)
        if len(commits) == 3:  # as _run does when a write meets damage
            store._rebuild("database disk image is malformed")
        return commit(batch)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "commit", damaged_on_the_third)
    report = ingestor.ingest()
    assert store.rebuilds == 1 and store.count() == 12
    assert any("read again from the transcripts" in n for n in report.notices)
    for path, state in store.sources().items():
        assert state.offset == Path(path).stat().st_size
    assert ingestor.ingest().documents_added == 0  # nothing left behind


def test_a_file_replaced_by_another_process_is_reopened(project: Project) -> None:
    one_session(project)
    layer = layer_for(project)
    layer.backfill()
    path = layer.store.path
    # Another process moved the damaged file aside and recreated it.
    path.rename(path.with_name(path.name + ".corrupt-elsewhere"))
    SessionStore(path).close()
    assert layer.store.count() == 0  # reads the fresh file, not the moved one
    assert layer.backfill().documents_added == 2
    assert layer.store.count() == 2


def test_a_version_1_file_is_upgraded_in_place(project: Project) -> None:
    path = one_session(project)
    layer = layer_for(project)
    layer.backfill()
    store_path = layer.store.path
    close_stores()
    conn = sqlite3.connect(store_path)
    conn.execute("ALTER TABLE sources DROP COLUMN tail_hash")
    conn.execute("UPDATE meta SET value = 1 WHERE key = ?", (schema.META_SCHEMA_VERSION,))
    conn.commit()
    conn.close()

    layer = layer_for(project)
    assert layer.store.meta()[schema.META_SCHEMA_VERSION] == SESSIONS_SCHEMA_VERSION
    assert layer.store.count() == 2  # kept, not dropped and re-read
    state = layer.store.source(str(path))
    assert state is not None and state.tail_hash == ""
    with path.open("a") as fh:
        fh.write(json.dumps(_pi_user("e-late", "and the late message")) + "\n")
    report = layer.backfill()
    assert (report.documents_added, report.files_rewritten) == (1, 0)
    state = layer.store.source(str(path))
    assert state is not None and state.tail_hash  # recorded by that read


def _pi_user(entry_id: str, text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": "2026-08-13T15:00:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 0},
    }


def _cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)  # MEMLANE_HOME and the agent dirs, isolated by the fixtures
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(HERE / "_cli.py"), "-C", str(project.root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_commands_survive_a_damaged_file(project: Project) -> None:
    one_session(project)
    done = _cli(project, "sessions", "backfill", "--json")
    assert done.returncode == 0, done.stderr
    path = layer_for(project).store.path
    close_stores()
    commands: list[tuple[tuple[str, ...], str | None]] = [
        (("sessions", "status"), "damaged and rebuilt"),
        (("sessions", "search", "invoice"), "damaged and rebuilt"),
        (("search", "invoice", "--kind", "session"), "damaged and rebuilt"),
        (("status", "--no-probe"), None),
    ]
    for n, (args, expected) in enumerate(commands, start=1):
        corrupt(path)
        run = _cli(project, *args)
        output = run.stdout + run.stderr
        assert run.returncode == 0, (args, output)
        assert "Traceback" not in output and "DatabaseError" not in output, (args, output)
        if expected is not None:
            assert expected in output, (args, output)
        assert len(quarantined(path)) == n, args
    # The search commands caught up first: the messages are back.
    found = _cli(project, "sessions", "search", "invoice", "--json")
    assert json.loads(found.stdout)["hits"]
    corrupt(path)
    status = _cli(project, "status", "--json", "--no-probe")
    assert status.returncode == 0, status.stderr
    assert "not a database" in json.loads(status.stdout)["sessions"]["rebuilt"]


# -- 2. rewrites that keep the first bytes -----------------------------------------------


def _long_header_session(session_id: str = "sess-rw") -> PiSession:
    session = PiSession(session_id)
    # A first message longer than HEAD_BYTES: the head check sees only it.
    session.user("context " * (HEAD_BYTES // 4), entry_id="e-long")
    return session


@pytest.mark.parametrize(
    "replacement",
    [
        "fresh message omega",  # same length: the line end stays, the tail hash differs
        "a much longer replacement message",  # the stored offset lands mid-line
    ],
)
def test_in_place_rewrite_keeping_the_head_is_read_whole(
    project: Project, replacement: str
) -> None:
    session = _long_header_session()
    session.assistant("the long context is noted", entry_id="e-ack")
    session.user("stale message alpha", entry_id="e-stale")
    path = session.write(project.pi_file())
    layer = layer_for(project, HashEmbedder())
    layer.backfill()
    assert layer.search("stale alpha", mode="lexical").hits

    rewritten = session.text().replace("stale message alpha", replacement)
    rewritten += json.dumps(_pi_user("e-new", "brand new kafka question")) + "\n"
    assert rewritten[: 2 * HEAD_BYTES] == session.text()[: 2 * HEAD_BYTES]
    inode = path.stat().st_ino
    with path.open("r+", encoding="utf-8") as fh:  # same inode, not shorter
        fh.write(rewritten)
    assert path.stat().st_ino == inode

    report = layer.backfill()
    assert report.files_rewritten == 1
    texts = [d.text for d in layer.store.docs_of(str(path))]
    assert "stale message alpha" not in texts
    assert replacement in texts and "brand new kafka question" in texts
    assert not layer.search("stale alpha", mode="lexical").hits
    assert layer.search("kafka", mode="lexical").hits


def test_an_append_is_still_read_from_the_offset(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _long_header_session()
    chat(session, 40)  # past TAIL_BYTES, so the tail window does not start at byte 0
    path = session.write(project.pi_file())
    assert path.stat().st_size > HEAD_BYTES + TAIL_BYTES
    embedder = HashEmbedder()
    layer = layer_for(project, embedder)
    layer.backfill()
    stored = layer.store.count()
    embedded = embedder.embedded

    reads: list[FileRead] = []

    def counting(*args: object, **kwargs: object) -> FileRead | None:
        read = read_source(*args, **kwargs)  # type: ignore[arg-type]
        if read is not None:
            reads.append(read)
        return read

    monkeypatch.setattr(engine_sessions, "read_source", counting)
    chat(session, 2, topic="kafka consumer")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(session.lines[-4:]) + "\n")
    report = layer.backfill()
    assert (report.files_read, report.files_rewritten, report.documents_added) == (1, 0, 4)
    # Only the appended lines were parsed, and only their messages embedded.
    assert len(reads) == 1 and not reads[0].replace and len(reads[0].docs) == 4
    assert embedder.embedded - embedded == 4
    assert layer.store.count() == stored + 4


def test_a_batch_offset_mid_file_resumes_without_a_reread(project: Project) -> None:
    """A batch committed mid-file records its own offset's tail hash: the
    resume after a kill reads on from there instead of re-reading the file."""
    session = _long_header_session()
    chat(session, 30)
    path = session.write(project.pi_file())
    from memlane.core.settings import SessionsSettings

    first = read_source(Source(path, PI), None, SessionsSettings())
    assert first is not None
    middle = first.docs[len(first.docs) // 2][0]
    resumed = read_source(Source(path, PI), first.state_at(middle), SessionsSettings())
    assert resumed is not None and not resumed.replace
    assert [d.key for _, d in resumed.docs] == [d.key for pos, d in first.docs if pos > middle]
