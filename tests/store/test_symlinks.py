"""Issue 14, item 3: no read or write of the store follows a symbolic link out of it.

Each attack is one a repository can commit: a daily file, ``MEMORY.md``, a
topic file or the ``topics`` directory made a link to a file of the user's,
a link deeper in the store, a dangling link, the store directory itself.
Each must leave the outside file as it was, fail with one line naming the
link, lose nothing else, and keep the outside text out of the snapshot, the
index and the LLM's view. A link the user configured (``MEMSEARCH_DIR``, a
store command) is followed, and ``status`` says so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from helpers import NOW, FixedClock, open_memory, start_session
from memlane.core.clock import local
from memlane.core.errors import StoreError
from memlane.engine.journal.maintenance import append_compact_block
from memlane.engine.project import Memory
from memlane.engine.reports import render_status
from memlane.engine.topics.dream.orient import journal_entries
from memlane.engine.topics.surfacing import memory_index_block
from memlane.store import topics as T
from memlane.store.daily import daily_path
from memlane.store.forget import forget_entry
from memlane.store.safe_paths import UnsafePathError, open_store_file, read_bytes

SECRET = "export AWS_PROFILE=prod-admin  # the outside file's own text\n"
TODAY = local(NOW).date()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the user's that no store operation may touch (a ``~/.bashrc``)."""
    path = tmp_path / "home" / ".bashrc"
    path.parent.mkdir()
    path.write_text(SECRET, encoding="utf-8")
    return path


@pytest.fixture
def store(memory: Memory) -> Path:
    """The project's store with one ordinary entry already in it."""
    memory.write("- the team picked SQLite for the index", now=NOW)
    return memory.scope.store


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below *root*: file bytes, or the target of a link."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_file():
                out[rel] = path.read_bytes()
    return out


def _one_line(exc: StoreError) -> str:
    assert "\n" not in exc.message and "\n" not in (exc.hint or "")
    return exc.message


# --- daily files -------------------------------------------------------------------------


def test_a_write_to_a_daily_file_linked_outside_is_refused(
    memory: Memory, outside: Path, tmp_path: Path
) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    daily = daily_path(store, TODAY)
    daily.symlink_to(outside)
    with pytest.raises(UnsafePathError) as caught:
        memory.write("hello", now=NOW)
    assert str(daily) in _one_line(caught.value) and "symbolic link" in caught.value.message
    assert caught.value.hint and "remove the link" in caught.value.hint
    assert outside.read_text(encoding="utf-8") == SECRET
    assert daily.is_symlink()  # left for the user to see and remove


def test_a_dangling_daily_link_creates_nothing_through_it(memory: Memory, tmp_path: Path) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    target = tmp_path / "home" / ".profile"
    target.parent.mkdir()
    daily_path(store, TODAY).symlink_to(target)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        memory.write("hello", now=NOW)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_other_days_stay_writable_readable_and_searchable(
    memory: Memory, store: Path, outside: Path
) -> None:
    (store / "2026-11-29.md").symlink_to(outside)  # yesterday's "daily file"
    memory.write("- a second note the same day", now=NOW)  # today's file is real: fine
    hits = memory.search("SQLite", mode="lexical").hits
    assert hits and all(Path(h.source).resolve().is_relative_to(store.resolve()) for h in hits)
    assert not any("AWS_PROFILE" in h.content for h in memory.search("AWS_PROFILE").hits)


def test_the_snapshot_never_carries_a_linked_daily_file(memory: Memory, outside: Path) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    daily_path(store, TODAY).symlink_to(outside)
    session = start_session(memory)
    try:
        text = session.before_agent_start("hello").system_append
    finally:
        session.shutdown()
    assert "AWS_PROFILE" not in text
    assert "symbolic link" in text  # the day says why it is not shown


def test_forget_refuses_a_linked_daily_file(memory: Memory, store: Path, outside: Path) -> None:
    linked = store / "2026-01-05.md"
    outside.write_text("# 2026-01-05\n\n### 09:00\n- the outside text\n", encoding="utf-8")
    before = outside.read_bytes()
    linked.symlink_to(outside)
    with pytest.raises(StoreError, match="symbolic link"):
        forget_entry(store, "2026-01-05", "09:00")
    assert outside.read_bytes() == before


def test_a_compact_block_is_not_appended_through_a_link(
    memory: Memory, outside: Path, clock: FixedClock
) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    daily_path(store, TODAY).symlink_to(outside)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        append_compact_block(store, "- the summary", NOW)
    assert outside.read_text(encoding="utf-8") == SECRET


def test_the_dream_never_reads_a_linked_daily_file(store: Path, outside: Path) -> None:
    outside.write_text("# 2026-11-29\n\n### 09:00\n- AWS_PROFILE=prod-admin\n", encoding="utf-8")
    (store / "2026-11-29.md").symlink_to(outside)
    entries, _ = journal_entries(store, None, 100_000)
    assert entries and not any("AWS_PROFILE" in e.text for e in entries)


# --- MEMORY.md and topic files -------------------------------------------------------------


def test_a_linked_memory_index_stays_out_of_the_system_prompt(
    memory: Memory, outside: Path
) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    (store / "MEMORY.md").symlink_to(outside)
    assert memory_index_block(store, memory.config.topics) is None
    session = start_session(memory)
    try:
        text = session.before_agent_start("hello").system_append
    finally:
        session.shutdown()
    assert "AWS_PROFILE" not in text


def test_a_topic_add_refuses_a_linked_memory_index(memory: Memory, outside: Path) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    (store / "MEMORY.md").symlink_to(outside)
    with pytest.raises(UnsafePathError) as caught:
        T.add(store, content="fact", topic="tooling", title="Use uv", today=TODAY)
    assert str(store / "MEMORY.md") in _one_line(caught.value)
    assert outside.read_text(encoding="utf-8") == SECRET
    assert (store / "MEMORY.md").is_symlink()


def test_a_topic_file_linked_inside_the_store_is_refused_too(store: Path) -> None:
    topics = store / "topics"
    topics.mkdir()
    T.add(store, content="fact", topic="real", title="A real entry", today=TODAY)
    (topics / "alias.md").symlink_to(topics / "real.md")
    before = (topics / "real.md").read_bytes()
    with pytest.raises(UnsafePathError, match="symbolic link"):
        T.add(store, content="more", topic="alias", title="Through the alias", today=TODAY)
    assert (topics / "real.md").read_bytes() == before
    assert [info.slug for info in T.list_topics(store)] == ["real"]


def test_a_linked_topics_directory_is_refused_for_reads(
    memory: Memory, outside: Path, tmp_path: Path
) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    (elsewhere / "leak.md").write_text("---\nname: Leak\n---\n## Key\nAWS_PROFILE\n")
    (store / "topics").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(StoreError, match="symbolic link"):
        T.list_topics(store)
    with pytest.raises(StoreError, match="symbolic link"):
        T.read_topic(store, "leak")


# --- the index --------------------------------------------------------------------------------


def test_the_index_skips_every_link_and_reports_it(
    memory: Memory, store: Path, outside: Path, tmp_path: Path
) -> None:
    deeper = store / "notes"
    deeper.mkdir()
    (deeper / "profile.md").symlink_to(outside)  # a link deeper in the store, pointing out
    (store / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (store / "again.md").symlink_to(daily_path(store, TODAY))  # pointing inside
    report = memory.sync()
    failed = {Path(f.path).name: f.error for f in report.failed_files}
    assert set(failed) == {"profile.md", "dangling.md", "again.md"}
    assert all("symbolic link" in e and "remove the link" in e for e in failed.values())
    sources = {Path(s).name for s in memory.index.files()}
    assert sources == {daily_path(store, TODAY).name}  # the real entry is still indexed
    st = memory.status()
    assert any("could not be indexed" in line for line in st.missing)
    assert "profile.md: a symbolic link" in render_status(st)


def test_a_fifo_in_the_store_is_skipped_not_waited_on(memory: Memory, store: Path) -> None:
    os.mkfifo(store / "2026-01-06.md")
    report = memory.sync()  # would block forever on open() if the FIFO were read
    assert report.total_files == 1
    with pytest.raises(UnsafePathError, match="not a regular file"):
        read_bytes(store, store / "2026-01-06.md")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        os.close(open_store_file(store, store / "2026-01-06.md", os.O_WRONLY | os.O_APPEND))


# --- the store directory itself -------------------------------------------------------------


def test_a_committed_store_link_is_refused_and_reported(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (elsewhere / "memory").mkdir()
    (project / ".memsearch").symlink_to(elsewhere, target_is_directory=True)
    before = _tree(elsewhere)
    with open_memory(project, clock=clock) as mem:
        with pytest.raises(UnsafePathError) as caught:
            mem.write("hello", now=NOW)
        assert str(project / ".memsearch") in _one_line(caught.value)
        assert caught.value.hint and "MEMSEARCH_DIR" in caught.value.hint
        with pytest.raises(UnsafePathError):
            mem.sync()
        with pytest.raises(StoreError):
            T.add(mem.scope.store, content="x", topic="t", title="T", today=TODAY)
        st = mem.status()
    assert _tree(elsewhere) == before  # no entry, no lock, no index state written there
    assert any(line.startswith("store: the memory store") for line in st.missing)


def test_a_committed_memory_link_inside_a_real_tree_is_refused(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (project / ".memsearch").mkdir()
    (project / ".memsearch" / "memory").symlink_to(elsewhere, target_is_directory=True)
    with open_memory(project, clock=clock) as mem, pytest.raises(UnsafePathError):
        mem.write("hello", now=NOW)
    assert list(elsewhere.iterdir()) == []


def test_a_store_link_the_user_configured_is_followed_and_shown(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    real = tmp_path / "data" / "ms"
    real.mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    with open_memory(project, clock=clock, MEMSEARCH_DIR=str(alias)) as mem:
        entry = mem.write("hello", now=NOW)
        st = mem.status()
    assert Path(entry.path).parent == real / "memory"
    assert st.store_link == (
        f"store is a link to {real / 'memory'} (configured by MEMSEARCH_DIR={alias})"
    )
    assert any(
        line.startswith("store link") and line.endswith(st.store_link)
        for line in render_status(st).splitlines()
    )
    assert not any(line.startswith("store:") for line in st.missing)


def test_a_store_command_answer_through_a_link_is_followed_and_shown(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    real = tmp_path / "stores" / "p"
    real.mkdir(parents=True)
    alias = tmp_path / "linked-stores"
    alias.symlink_to(tmp_path / "stores", target_is_directory=True)
    script = tmp_path / "store-cmd"
    script.write_text(
        f'#!/bin/sh\ncase "$1" in memory-dir) echo {alias}/p/memory;; '
        "collection) echo ms_p_00000001;; state-dir) echo " + str(real) + ";; esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with open_memory(project, clock=clock, MEMLANE_STORE_CMD=str(script)) as mem:
        entry = mem.write("hello", now=NOW)
        st = mem.status()
    assert Path(entry.path).parent == real / "memory"
    assert st.store_link is not None and "configured by MEMLANE_STORE_CMD" in st.store_link


def test_a_session_over_a_committed_store_link_starts_and_shows_nothing_of_it(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "home"
    (elsewhere / "memory").mkdir(parents=True)
    (elsewhere / "memory" / f"{TODAY.isoformat()}.md").write_text(
        f"# {TODAY.isoformat()}\n\n### 09:00\n- {SECRET}", encoding="utf-8"
    )
    (elsewhere / "memory" / "MEMORY.md").write_text(f"- [Leak](topics/x.md) — {SECRET}")
    (project / ".memsearch").symlink_to(elsewhere, target_is_directory=True)
    before = _tree(elsewhere)
    with open_memory(project, clock=clock) as mem:
        session = start_session(mem)
        try:
            text = session.before_agent_start("hello").system_append
        finally:
            session.shutdown()
    assert "AWS_PROFILE" not in text
    assert _tree(elsewhere) == before


def test_a_path_outside_the_store_is_refused_by_the_helper(store: Path, outside: Path) -> None:
    with pytest.raises(UnsafePathError, match="outside the memory store"):
        read_bytes(store, outside)
    with pytest.raises(UnsafePathError, match="outside the memory store"):
        read_bytes(store, store / ".." / "elsewhere.md")
    assert read_bytes(store, daily_path(store, TODAY)).startswith(b"# ")
