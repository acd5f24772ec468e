"""Reaching Milvus: a Lite database another process holds is retried, then
reported as locked; a plain file, an unreachable server are one-line errors;
a URI is shown without its secrets."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _builders import DIM, MODEL, make_file, src, vectors_for
from _lite import open_index

from memlane.index.milvus.connection import LiteServers, display_uri
from memlane.index.protocol import IndexBusyError, IndexUnavailableError

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pymilvus import MilvusClient
    client = MilvusClient(uri=sys.argv[1])
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    """
)


@pytest.fixture
def held_db(tmp_path: Path) -> Iterator[Path]:
    """A Lite database opened (and so locked) by another process."""
    db = tmp_path / "held.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    yield db
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=30)


@pytest.mark.subprocess
def test_a_database_another_process_holds_is_reported_locked(held_db: Path, tmp_path: Path) -> None:
    index = open_index(
        held_db, "ms_held", tmp_path / "ledger.sqlite", backoff_delays_ms=(10, 20, 30)
    )
    with pytest.raises(IndexBusyError) as caught:
        index.ensure_model(MODEL, DIM)
    message = str(caught.value)
    assert f"the Milvus Lite database {held_db} is in use by another process (locked)" in message
    assert "use a Milvus server for several processes" in message
    assert "\n" not in message
    index.close()
    # Each backoff delay is waited once before giving up.
    slept: list[float] = []
    with pytest.raises(IndexBusyError):
        LiteServers(linger_s=0).acquire(held_db, (10, 20, 30), sleep=slept.append)
    assert slept == [0.01, 0.02, 0.03]


@pytest.mark.subprocess
def test_the_database_is_usable_once_the_other_process_lets_go(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    writer = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pymilvus import MilvusClient; MilvusClient(uri=sys.argv[1]).close()",
            str(db),
        ],
        check=True,
        capture_output=True,
    )
    assert writer.returncode == 0
    index = open_index(db, "ms_after", tmp_path / "ledger.sqlite")
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), ["one"])
    assert index.replace_file(record, chunks, vectors_for(chunks)) == 1
    index.close()


def test_a_plain_file_is_not_a_database(tmp_path: Path) -> None:
    old = tmp_path / "milvus.db"
    old.write_bytes(b"SQLite format 3\x00 a Milvus Lite 2.x file")
    index = open_index(old, "ms_file", tmp_path / "ledger.sqlite")
    with pytest.raises(IndexUnavailableError) as caught:
        index.ensure_model(MODEL, DIM)
    message = str(caught.value)
    assert f"{old} is a file, not a Milvus Lite 3 database" in message
    assert "locked" not in message
    assert old.read_bytes().startswith(b"SQLite format 3")  # left as it was
    index.close()


def test_a_path_without_db_suffix_is_explained(tmp_path: Path) -> None:
    index = open_index(tmp_path / "milvus", "ms_x", tmp_path / "ledger.sqlite")
    record, chunks = make_file(src(tmp_path, "a.md"), ["one"])
    with pytest.raises(IndexUnavailableError, match=r"does not end in \.db"):
        index.replace_file(record, chunks, vectors_for(chunks))
    index.close()


def test_reads_of_a_database_never_written_create_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never" / "milvus.db"
    index = open_index(db, "ms_x", tmp_path / "ledger.sqlite")
    assert index.ensure_model(MODEL, DIM) is False
    assert (index.count(), index.files(), index.search("q", None, 3)) == (0, {}, ("lexical", []))
    assert index.health()["reachable"] is True
    assert index.health()["exists"] is False
    assert not db.exists()
    index.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_server_is_unavailable(tmp_path: Path) -> None:
    uri = f"http://root:secret@127.0.0.1:{closed_port()}"
    index = open_index(uri, "ms_remote", tmp_path / "ledger.sqlite")
    assert "secret" not in index.uri
    with pytest.raises(IndexUnavailableError) as caught:
        index.ensure_model(MODEL, DIM)
    message = str(caught.value)
    assert message.startswith("cannot reach Milvus at http://127.0.0.1:")
    assert "start it or fix index.uri" in message
    assert "secret" not in message
    health = index.health()
    assert (health["reachable"], health["exists"], health["rows"]) == (False, False, None)
    assert "cannot reach Milvus" in health["error"]
    index.close()


def test_display_uri_hides_credentials() -> None:
    assert display_uri("https://user:pw@example.zillizcloud.com:443/db") == (
        "https://example.zillizcloud.com:443/db"
    )
    assert display_uri("http://localhost:19530") == "http://localhost:19530"
    assert display_uri("/tmp/m/milvus.db") == "milvus-lite:///tmp/m/milvus.db"
    assert display_uri("milvus-lite:///tmp/m/milvus.db") == "milvus-lite:///tmp/m/milvus.db"


def test_an_unreachable_server_is_remembered_for_a_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.index.milvus import connection

    uri = f"http://127.0.0.1:{closed_port()}"
    first = open_index(uri, "ms_remote", tmp_path / "a.sqlite")
    with pytest.raises(IndexUnavailableError) as caught:
        first.count()
    assert uri in connection.UNREACHABLE
    # Another index object of this process is told at once, with the same words.
    second = open_index(uri, "ms_remote", tmp_path / "b.sqlite")
    with pytest.raises(IndexUnavailableError) as again:
        second.count()
    assert str(again.value) == str(caught.value)
    # Past the window, the server is tried again (and still refused here).
    monkeypatch.setattr(connection, "UNREACHABLE_RETRY_S", 0.0)
    connection.UNREACHABLE[uri] = (0.0, caught.value)
    with pytest.raises(IndexUnavailableError):
        second.count()
    assert connection.UNREACHABLE[uri][0] > 0.0  # a fresh failure was recorded
    first.close()
    second.close()
