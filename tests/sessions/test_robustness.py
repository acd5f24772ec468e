"""The sessions store survives a damaged file, and the rewrite check sees
in-place rewrites that keep the first bytes (review findings 1 and 2)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from _fixtures import HashEmbedder, PiSession, Project, chat

from helpers import Cli
from memlane.engine.project import Memory
from memlane.engine.sessions.ingest import SessionIngestor
from memlane.engine.sessions.layer import SessionsLayer, project_sources
from memlane.engine.sessions.reader import HEAD_BYTES, TAIL_BYTES, read_source
from memlane.engine.sessions.registry import close_stores, open_store
from memlane.index.sqlite import schema
from memlane.index.sqlite.recovery import file_id, file_lock, move_aside
from memlane.index.sqlite.session_schema import SESSIONS_SCHEMA_VERSION
from memlane.index.sqlite.sessions import SessionStore
from memlane.transcripts.locate import Source
from memlane.transcripts.model import PI


def layer_for(agent_project: Project, embedder: HashEmbedder | None = None) -> SessionsLayer:
    return SessionsLayer(Memory.open(agent_project.root), embedder=embedder)


def corrupt(path: Path) -> None:
    """What the reviewer did: ``head -c 5000 /dev/urandom > file``."""
    path.write_bytes(os.urandom(5000))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def quarantined(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.glob(path.name + ".corrupt-*") if "-wal" not in p.name)


def one_session(agent_project: Project) -> Path:
    session = PiSession("sess-robust")
    session.user("where do the invoice exports go")
    session.assistant("the invoice exporter writes csv files to the exports bucket")
    return session.write(agent_project.pi_file())


# -- 1. a damaged file -------------------------------------------------------------------


def test_a_damaged_file_is_deleted_rebuilt_and_read_again(agent_project: Project) -> None:
    one_session(agent_project)
    layer = layer_for(agent_project)
    assert layer.backfill().documents_added == 2
    path = layer.store.path
    close_stores()
    corrupt(path)

    layer = layer_for(agent_project)  # opening the store finds the damage
    assert quarantined(path) == []  # the damaged copy was deleted
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
    agent_project: Project,
) -> None:
    one_session(agent_project)
    layer = layer_for(agent_project)
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
    assert quarantined(path) == []  # the damaged copy was deleted


def tear_pages(path: Path, *, keep: int = 1) -> None:
    """Overwrite every page of an SQLite file but the first ``keep`` with
    noise, in place (same inode): torn writes, as a crash or a bad disk
    leaves them."""
    with path.open("rb") as fh:
        header = fh.read(100)
    assert header.startswith(b"SQLite format 3\x00"), "not an SQLite file"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size  # the header's way of saying 64 KiB
    pages = path.stat().st_size // page_size
    assert pages > keep, "nothing to tear"
    with path.open("r+b") as fh:
        fh.seek(keep * page_size)
        fh.write(os.urandom((pages - keep) * page_size))


def test_damage_met_by_a_query_rebuilds_and_runs_it_again(tmp_path: Path) -> None:
    path = tmp_path / "p.sessions.sqlite"
    SessionStore(path).close()  # closed: checkpointed, every page in the file itself
    store = SessionStore(path)  # opening reads the schema page
    tear_pages(path)  # behind the open connection's back: the next query meets it
    assert store.count() == 0  # answered, from the fresh file
    assert store.rebuilds == 1 and store.rebuilt_reason is not None
    assert "malformed" in store.rebuilt_reason and "deleted" in store.rebuilt_reason
    assert quarantined(store.path) == []
    store.set_meta({"probe": 1})  # the fresh file takes writes
    assert store.meta()["probe"] == 1
    store.close()


def test_a_rebuild_in_the_middle_of_a_pass_reads_its_files_again(agent_project: Project) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        session = PiSession(f"sess-{name}")
        chat(session, 3, topic=f"topic {name}")
        session.write(agent_project.pi_file(name))
    mem = Memory.open(agent_project.root)
    store = open_store(mem)
    ingestor = SessionIngestor(
        store,
        None,
        mem.config.sessions,
        lambda: project_sources(mem),
        batch_size=2,
    )
    rebuilt: list[int] = []

    def another_process_rebuilds(done: int, total: int, what: str) -> None:
        """After the second batch, another memlane finds the file damaged
        and rebuilds it (recovery.py): moved aside, recreated empty."""
        if done == 4 and not rebuilt:
            rebuilt.append(done)
            with file_lock(store.path, exclusive=True):
                assert move_aside(store.path, file_id(store.path)) is not None
            SessionStore(store.path).close()

    report = ingestor.ingest(progress=another_process_rebuilds)
    assert rebuilt == [4]
    assert store.rebuilds == 1 and store.count() == 12
    assert any("read again from the transcripts" in n for n in report.notices)
    for path, state in store.sources().items():
        assert state.offset == Path(path).stat().st_size
    assert len(store.sources()) == 2
    assert ingestor.ingest().documents_added == 0  # nothing left behind


def test_a_file_replaced_by_another_process_is_reopened(agent_project: Project) -> None:
    one_session(agent_project)
    layer = layer_for(agent_project)
    layer.backfill()
    path = layer.store.path
    # Another process moved the damaged file aside and recreated it.
    path.rename(path.with_name(path.name + ".corrupt-elsewhere"))
    SessionStore(path).close()
    assert layer.store.count() == 0  # reads the fresh file, not the moved one
    assert layer.backfill().documents_added == 2
    assert layer.store.count() == 2


def test_a_version_1_file_is_upgraded_in_place(agent_project: Project) -> None:
    path = one_session(agent_project)
    layer = layer_for(agent_project)
    layer.backfill()
    store_path = layer.store.path
    close_stores()
    conn = sqlite3.connect(store_path)
    conn.execute("ALTER TABLE sources DROP COLUMN tail_hash")
    conn.execute("UPDATE meta SET value = 1 WHERE key = ?", (schema.META_SCHEMA_VERSION,))
    conn.commit()
    conn.close()

    layer = layer_for(agent_project)
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


def test_cli_commands_survive_a_damaged_file(agent_project: Project, cli: Cli) -> None:
    one_session(agent_project)
    done = cli("sessions", "backfill", "--json")
    assert done.returncode == 0, done.stderr
    path = layer_for(agent_project).store.path
    commands: list[tuple[tuple[str, ...], str | None]] = [
        (("sessions", "status"), "damaged and rebuilt"),
        (("sessions", "search", "invoice"), "damaged and rebuilt"),
        (("search", "invoice", "--kind", "session"), "damaged and rebuilt"),
        (("status", "--no-probe"), None),
    ]
    for args, expected in commands:
        # Each command as a fresh process meets it: nothing of the last one stays open.
        close_stores()
        corrupt(path)
        run = cli(*args)
        output = run.stdout + run.stderr
        assert run.returncode == 0, (args, output)
        assert "Traceback" not in output and "DatabaseError" not in output, (args, output)
        if expected is not None:
            assert expected in output, (args, output)
        assert quarantined(path) == [], args  # each damaged copy deleted after the rebuild
    # The search commands caught up first: the messages are back.
    found = cli("sessions", "search", "invoice", "--json")
    assert json.loads(found.stdout)["hits"]
    close_stores()
    corrupt(path)
    status = cli("status", "--json", "--no-probe")
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
    agent_project: Project, replacement: str
) -> None:
    session = _long_header_session()
    session.assistant("the long context is noted", entry_id="e-ack")
    session.user("stale message alpha", entry_id="e-stale")
    path = session.write(agent_project.pi_file())
    layer = layer_for(agent_project, HashEmbedder())
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


def test_an_append_is_still_read_from_the_offset(agent_project: Project) -> None:
    session = _long_header_session()
    chat(session, 40)  # past TAIL_BYTES, so the tail window does not start at byte 0
    path = session.write(agent_project.pi_file())
    assert path.stat().st_size > HEAD_BYTES + TAIL_BYTES
    embedder = HashEmbedder()
    layer = layer_for(agent_project, embedder)
    assert layer.backfill().bytes_read == path.stat().st_size
    stored = layer.store.count()
    embedded = embedder.embedded

    chat(session, 2, topic="kafka consumer")
    appended = ("\n".join(session.lines[-4:]) + "\n").encode()
    with path.open("ab") as fh:
        fh.write(appended)
    report = layer.backfill()
    assert (report.files_read, report.files_rewritten, report.documents_added) == (1, 0, 4)
    # Only the appended lines were parsed, and only their messages embedded.
    assert report.bytes_read == len(appended)
    assert embedder.embedded - embedded == 4
    assert layer.store.count() == stored + 4


def test_a_batch_offset_mid_file_resumes_without_a_reread(agent_project: Project) -> None:
    """A batch committed mid-file records its own offset's tail hash: the
    resume after a kill reads on from there instead of re-reading the file."""
    session = _long_header_session()
    chat(session, 30)
    path = session.write(agent_project.pi_file())
    from memlane.core.settings import SessionsSettings

    first = read_source(Source(path, PI), None, SessionsSettings())
    assert first is not None
    middle = first.docs[len(first.docs) // 2][0]
    resumed = read_source(Source(path, PI), first.state_at(middle), SessionsSettings())
    assert resumed is not None and not resumed.replace
    assert [d.key for _, d in resumed.docs] == [d.key for pos, d in first.docs if pos > middle]
