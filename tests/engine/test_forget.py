"""memory_forget: one whole entry or compact block, gone from store and index."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import FixedClock, IndexWriteLock, open_memory
from memlane.core.errors import MemlaneError, NotFoundError, StoreError
from memlane.engine.journal.maintenance import forget
from memlane.engine.project import Memory
from memlane.index.sqlite.notes import connection_hook
from memlane.store.forget import LOCK_NAME, RewriteHooks, forget_chunk, forget_entry

SECRET = "zanzibarquokka"  # one token that the porter stemmer leaves alone


def at(hhmm: str) -> datetime:
    hour, minute = map(int, hhmm.split(":"))
    return datetime(2026, 3, 14, hour, minute)


DAY = "2026-03-14"


def hit_hash(mem: Memory, query: str) -> str:
    hits = mem.search(query).hits
    assert hits, query
    return hits[0].chunk_hash


def every_file(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file()]


def grep(roots: list[Path], needle: str) -> list[str]:
    """Files whose raw bytes hold *needle* (any case), -wal/-shm included."""
    found = []
    for path in every_file(*roots):
        if needle.lower().encode() in path.read_bytes().lower():
            found.append(str(path))
    return found


def test_forget_by_chunk_hash_removes_the_whole_entry(memory: Memory) -> None:
    memory.write("kept one: the cache lives in redis", now=at("09:00"))
    memory.write(f"the deploy key is {SECRET}\nsecond bullet of the same entry", now=at("09:05"))
    memory.write("kept two: payments use stripe", now=at("09:10"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_text()
    removed = forget(memory, chunk_hash=hit_hash(memory, SECRET))
    after = path.read_text()
    assert removed.kind == "entry"
    assert removed.source == str(path.resolve())
    assert removed.markdown.startswith("### 09:05\n<!-- session:cli")
    assert "second bullet of the same entry" in removed.markdown
    assert SECRET not in after
    assert "second bullet" not in after
    assert "kept one" in after and "kept two" in after
    # Exactly the entry's lines went; everything else is byte-identical.
    assert before.replace(removed.markdown, "", 1) == after
    lines = before.split("\n")
    assert lines[removed.start_line - 1] == "### 09:05"
    assert removed.to_json()["markdown"] == removed.markdown
    assert removed.to_json()["kind"] == "entry"


def test_forget_by_date_and_time(memory: Memory) -> None:
    memory.write("kept: the cache lives in redis", now=at("09:00"))
    memory.write(f"remove me {SECRET}", now=at("09:05"))
    removed = forget(memory, date=DAY, time="09:05")
    text = (memory.scope.store / f"{DAY}.md").read_text()
    assert SECRET in removed.markdown and SECRET not in text
    assert "### 09:00" in text and "### 09:05" not in text
    # The last entry went with the blank line an append had put before it.
    assert text.endswith("- kept: the cache lives in redis\n")
    # The session heading stays (headings are left alone).
    assert "## Session 09:00" in text


def test_same_time_is_refused_not_guessed(memory: Memory) -> None:
    memory.write("first at nine", now=at("09:00"))
    memory.write("second at nine", now=at("09:00"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_bytes()
    with pytest.raises(StoreError) as info:
        forget(memory, date=DAY, time="09:00")
    assert "2 entries" in info.value.message
    assert "chunk hash" in (info.value.hint or "")
    assert path.read_bytes() == before
    # The hash picks exactly one of them.
    removed = forget(memory, chunk_hash=hit_hash(memory, "second"))
    assert "second at nine" in removed.markdown
    assert "first at nine" in path.read_text()


def test_unknown_hash_time_date_and_bad_addresses(memory: Memory) -> None:
    memory.write("something", now=at("09:00"))
    with pytest.raises(NotFoundError, match="no chunk 0123456789abcdef"):
        forget(memory, chunk_hash="0123456789abcdef")
    with pytest.raises(NotFoundError, match="not a chunk hash"):
        forget(memory, chunk_hash="nope")
    with pytest.raises(NotFoundError, match=r"no entry at 09:01 .*entries there: 09:00"):
        forget(memory, date=DAY, time="09:01")
    with pytest.raises(NotFoundError, match="no daily memory file for 2026-03-15"):
        forget(memory, date="2026-03-15", time="09:00")
    with pytest.raises(StoreError, match="invalid time"):
        forget(memory, date=DAY, time="9:00")
    with pytest.raises(StoreError, match="invalid date"):
        forget(memory, date="14.03.2026", time="09:00")
    with pytest.raises(MemlaneError, match="either a chunk hash or a date and a time"):
        forget(memory)
    with pytest.raises(MemlaneError, match="either a chunk hash or a date and a time"):
        forget(memory, chunk_hash="0123456789abcdef", date=DAY, time="09:00")
    with pytest.raises(MemlaneError, match="together"):
        forget(memory, date=DAY)


def test_stale_chunk_address_removes_nothing(memory: Memory) -> None:
    memory.write("alpha entry", now=at("09:00"))
    memory.write("beta entry", now=at("09:05"))
    store = memory.scope.store
    path = store / f"{DAY}.md"
    chunk = memory.index.get(hit_hash(memory, "beta"))
    assert chunk is not None
    # The file is edited by hand after indexing: line numbers now point
    # at another entry, and the hash no longer matches.
    path.write_text(path.read_text().replace("- alpha entry\n", "- alpha entry\n- more\n"))
    before = path.read_bytes()
    with pytest.raises(NotFoundError, match="no longer matches"):
        forget_chunk(
            store,
            chunk.source,
            chunk.start_line,
            chunk_hash=chunk.chunk_hash,
            model=memory.embedding.model,
        )
    assert path.read_bytes() == before


def test_text_outside_entries_and_other_files_are_refused(memory: Memory) -> None:
    memory.write("an entry", now=at("09:00"))
    store = memory.scope.store
    path = store / f"{DAY}.md"
    path.write_text(path.read_text() + "\n## Notes by hand\nsome hand-written notes here\n")
    chunk = memory.index.get(hit_hash(memory, "hand-written notes"))
    assert chunk is not None
    with pytest.raises(StoreError, match="not inside an entry"):
        forget(memory, chunk_hash=chunk.chunk_hash)
    topic = store / "topics" / "db.md"
    topic.parent.mkdir()
    topic.write_text("## Postgres\n### 09:00\n- a topic entry\n")
    with pytest.raises(StoreError, match="not a daily memory file"):
        forget_chunk(store, topic, 2)


def test_compact_block_removed_whole_via_a_hash_inside_it(memory: Memory) -> None:
    memory.write("before the block", now=at("09:00"))
    store = memory.scope.store
    path = store / f"{DAY}.md"
    block = (
        "\n## Memory Compact 09:30\n"
        "### Decisions\n- the team chose redis for caching\n"
        f"### Facts\n- the staging password hint is {SECRET}\n"
    )
    with path.open("a") as f:
        f.write(block)
    memory.write("after the block", now=at("10:00"))
    removed = forget(memory, chunk_hash=hit_hash(memory, SECRET))
    assert removed.kind == "compact"
    assert removed.markdown.startswith("## Memory Compact 09:30\n### Decisions")
    assert "after the block" not in removed.markdown
    assert "redis for caching" in removed.markdown and SECRET in removed.markdown
    text = path.read_text()
    assert "Memory Compact" not in text and "### Decisions" not in text
    assert "before the block" in text and "after the block" in text
    assert memory.search("redis caching").hits == []
    # Addressed by time, a compact block is found by its heading's time.
    with path.open("a") as f:
        f.write("\n## Memory Compact 11:00\n- another summary\n")
    removed = forget(memory, date=DAY, time="11:00")
    assert removed.kind == "compact" and "another summary" in removed.markdown


def test_chunks_leave_the_index_at_once(memory: Memory) -> None:
    memory.write("kept: the cache lives in redis", now=at("09:00"))
    memory.write(f"the deploy key is {SECRET}", now=at("09:05"))
    doomed = hit_hash(memory, SECRET)
    forget(memory, chunk_hash=doomed)
    # No sync in between: the index was updated by forget itself.
    assert memory.index.get(doomed) is None
    assert memory.search(SECRET, sync=False).hits == []
    assert memory.search("redis", sync=False).hits
    with sqlite3.connect(memory.internals.index_path) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM chunks WHERE content LIKE ? OR context LIKE ?",
            (f"%{SECRET}%", f"%{SECRET}%"),
        ).fetchone()[0]
        terms = conn.execute(
            "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, row)"
        ).fetchall()
        terms = conn.execute("SELECT term FROM temp.v WHERE term = ?", (SECRET,)).fetchall()
    assert rows == 0
    assert terms == []


@pytest.mark.parametrize("secure_delete", ["default", "off"])
def test_no_copy_survives_anywhere_memlane_writes(
    project: Path,
    clock: FixedClock,
    isolated_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    secure_delete: str,
) -> None:
    hooks = contextlib.ExitStack()
    insecure: list[sqlite3.Connection] = []

    def _insecure_index(conn: sqlite3.Connection) -> None:
        _insecure(conn)
        insecure.append(conn)

    if secure_delete == "off":
        # Many SQLite builds (not Debian's) leave deleted bytes in free
        # space by default: the purge must not rely on secure_delete. The
        # index's connections take the PRAGMA through its documented hook,
        # any other connection through sqlite3.connect.
        hooks.enter_context(connection_hook(_insecure_index))
        monkeypatch.setattr(sqlite3, "connect", _insecure_connect)
    with hooks, open_memory(project, clock=clock) as mem:
        # Many entries, several with the secret's neighbour as context, so
        # the index has real pages, FTS segments and a WAL.
        for n in range(40):
            mem.write(f"filler entry {n} about the build pipeline", now=at("08:00"))
        mem.search("filler")
        assert bool(insecure) == (secure_delete == "off")  # the index runs as asked
        mem.write(f"the root password is {SECRET} and the vault is {SECRET}vault", now=at("09:05"))
        mem.write("the entry right after, whose context held the secret", now=at("09:06"))
        for n in range(5):
            mem.write(f"late filler {n}", now=at("09:07"))
        mem.search(SECRET)  # indexed: the text is now in the SQLite file
        assert grep([isolated_home], SECRET)
        removed = forget(mem, chunk_hash=hit_hash(mem, SECRET))
        assert SECRET in removed.markdown
        assert removed.notices == ()
        store = mem.scope.store
        roots = [isolated_home, store, project]
        assert grep(roots, SECRET) == []
        state = mem.scope.state_path
        assert state is not None and state.exists()
        assert SECRET not in state.read_text()
        # Searching again (and re-opening the index) still finds nothing.
        assert mem.search(SECRET).hits == []
    assert grep([isolated_home, project, tmp_path], SECRET) == []


_real_sqlite_connect = sqlite3.connect


def _insecure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA secure_delete=OFF")


def _insecure_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    conn = _real_sqlite_connect(*args, **kwargs)
    _insecure(conn)
    return conn


def test_temp_and_lock_files_hold_no_memory_text(memory: Memory) -> None:
    memory.write("kept text", now=at("09:00"))
    memory.write(f"doomed {SECRET}", now=at("09:05"))
    store = memory.scope.store
    listing_before = sorted(p.name for p in store.iterdir())
    forget(memory, date=DAY, time="09:05")
    lock = store / LOCK_NAME
    assert lock.exists() and lock.read_bytes() == b""
    assert sorted(p.name for p in store.iterdir()) == sorted([*listing_before, LOCK_NAME])

    # On an error after the temp file exists (the rename fails), it is removed too.
    memory.write(f"doomed again {SECRET}", now=at("09:06"))
    renames: list[str] = []

    def boom(temp: str, target: Path) -> None:
        renames.append(temp)
        raise OSError("simulated failure in replace")

    path = store / f"{DAY}.md"
    before = path.read_bytes()
    with pytest.raises(OSError, match="simulated"):
        forget_entry(store, DAY, "09:06", hooks=RewriteHooks(replace=boom))
    assert renames and renames[0].endswith(".tmp")  # the temp file existed
    assert path.read_bytes() == before
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")]
    assert lock.read_bytes() == b""


def _append_entries(path: Path, count: int, started: threading.Event) -> None:
    """Another writer: one O_APPEND write per entry and no lock, as store/daily.py writes."""
    started.set()
    for n in range(count):
        data = f"\n### 12:00\n- concurrent append {n:05d}\n".encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, data)
        os.close(fd)
        if n % 50 == 0:
            time.sleep(0.001)


def test_concurrent_appends_during_forgets_are_never_lost(memory: Memory) -> None:
    for n in range(30):
        memory.write(f"doomed entry number {n:03d}", now=at("09:00"))
    store = memory.scope.store
    path = store / f"{DAY}.md"
    count = 3000
    # Each rewrite yields after writing its temp file, so appends keep landing
    # mid-removal (os.write releases the GIL: the appender thread runs between
    # the rewrite's reads and writes just as another process would).
    slow = RewriteHooks(temp_written=os.sched_yield)
    started = threading.Event()
    appender = threading.Thread(target=_append_entries, args=(path, count, started))
    appender.start()
    try:
        started.wait(10)
        forgotten = 0
        while appender.is_alive() or forgotten < 10:
            if forgotten >= 30:
                break
            removed = forget_chunk(
                store, path, _line_of(path, f"doomed entry number {forgotten:03d}"), hooks=slow
            )
            assert f"doomed entry number {forgotten:03d}" in removed.markdown
            forgotten += 1
    finally:
        appender.join(60)
    assert not appender.is_alive()
    text = path.read_text()
    appended = [line for line in text.split("\n") if line.startswith("- concurrent append")]
    assert len(appended) == count, f"lost {count - len(appended)} appends"
    assert len(set(appended)) == count
    for n in range(forgotten):
        assert f"doomed entry number {n:03d}" not in text
    for n in range(forgotten, 30):
        assert f"doomed entry number {n:03d}" in text
    assert forgotten >= 10
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")]


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().split("\n"), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def test_append_that_reaches_the_replaced_file_is_salvaged(memory: Memory) -> None:
    memory.write("kept entry", now=at("09:00"))
    memory.write("doomed entry", now=at("09:05"))
    store = memory.scope.store
    path = store / f"{DAY}.md"

    def replace_under_a_late_appender(temp: str, target: Path) -> None:
        # An appender opened the file before the replace and writes after
        # it: its bytes land in the old, now unlinked, inode.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.replace(temp, target)
        os.write(fd, b"\n### 12:00\n- late append\n")
        os.close(fd)

    late = RewriteHooks(replace=replace_under_a_late_appender)
    removed = forget_chunk(store, path, _line_of(path, "doomed entry"), hooks=late)
    text = path.read_text()
    assert "doomed entry" in removed.markdown and "doomed entry" not in text
    assert text.endswith("- kept entry\n\n### 12:00\n- late append\n")


def test_an_appender_stalled_past_the_quiet_time_is_still_salvaged(memory: Memory) -> None:
    # The window, widened on purpose: another tool opened the daily file
    # before the replace and writes only after the salvage has found the old
    # inode quiet (where it used to stop), as a process descheduled between
    # its open() and its write() on a loaded machine does.
    from memlane.store.forget import no_writers

    memory.write("kept entry", now=at("09:00"))
    memory.write("doomed entry", now=at("09:05"))
    store = memory.scope.store
    path = store / f"{DAY}.md"
    probe = os.open(path, os.O_RDONLY)
    try:
        if no_writers(probe) is None:
            pytest.skip(f"the file system of {store} has no leases (the documented fallback)")
    finally:
        os.close(probe)
    held: list[int] = []
    quiet = threading.Event()

    def replace_under_a_stalled_appender(temp: str, target: Path) -> None:
        held.append(os.open(path, os.O_WRONLY | os.O_APPEND))
        os.replace(temp, target)

    def stalled_appender() -> None:
        quiet.wait()
        os.write(held[0], b"\n### 12:00\n- stalled append\n")
        os.close(held[0])

    writer = threading.Thread(target=stalled_appender)
    writer.start()
    hooks = RewriteHooks(replace=replace_under_a_stalled_appender, quiet=quiet.set)
    try:
        forget_chunk(store, path, _line_of(path, "doomed entry"), hooks=hooks)
    finally:
        quiet.set()
        writer.join(60)
    text = path.read_text()
    assert "doomed entry" not in text
    assert text.endswith("- kept entry\n\n### 12:00\n- stalled append\n")


def test_the_kernel_tells_whether_a_file_is_still_open_for_writing(tmp_path: Path) -> None:
    from memlane.store.forget import no_writers

    path = tmp_path / "2026-11-20.md"
    path.write_text("x\n")
    reader = os.open(path, os.O_RDONLY)
    other_reader = os.open(path, os.O_RDONLY)  # readers do not count
    try:
        assert no_writers(reader) is True
        writer = os.open(path, os.O_WRONLY | os.O_APPEND)
        assert no_writers(reader) is False
        os.close(writer)
        assert no_writers(reader) is True
    finally:
        os.close(reader)
        os.close(other_reader)


def test_index_failure_after_the_removal_still_echoes_it(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.index.sqlite.notes

    # Set before the index is opened: its connection takes the busy wait then.
    monkeypatch.setattr(memlane.index.sqlite.notes, "BUSY_TIMEOUT_S", 0.2)
    memory.write(f"doomed {SECRET}", now=at("09:05"))
    memory.sync()
    with IndexWriteLock(memory.internals.index_path):  # another process holds the index
        removed = forget(memory, date=DAY, time="09:05")
    assert SECRET in removed.markdown
    assert "locked by another process" in removed.notices[0]
    assert "run `memlane index`" in removed.notices[0]
    assert SECRET not in (memory.scope.store / f"{DAY}.md").read_text()
    assert memory.search(SECRET).hits == []  # the next sync drops its chunks


def test_a_confirmed_forget_is_refused_when_the_entry_changed_since(memory: Memory) -> None:
    from memlane.core.errors import ConflictError
    from memlane.engine.journal.forget_preview import preview_forget

    memory.write("the cache lives in redis", now=at("09:00"))
    memory.write("payments use stripe", now=at("09:10"))
    path = memory.scope.store / f"{DAY}.md"
    shown = preview_forget(memory, date=DAY, time="09:00")
    path.write_text(path.read_text().replace("lives in redis", "lives in memcached"))
    changed = path.read_text()
    with pytest.raises(ConflictError, match="changed since the removal was confirmed"):
        forget(memory, date=DAY, time="09:00", expect=shown.fingerprint())
    assert path.read_text() == changed  # nothing removed
    again = preview_forget(memory, date=DAY, time="09:00")
    removed = forget(memory, date=DAY, time="09:00", expect=again.fingerprint())
    assert "memcached" in removed.markdown and "memcached" not in path.read_text()
    assert "payments use stripe" in path.read_text()
