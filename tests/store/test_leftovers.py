"""Temporary files a killed writer left: swept at the next lock, never a live writer's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import TOPIC_DAY, make_project, run_memlane
from memlane.store import topics as T
from memlane.store.forget import forget_entry
from memlane.store.leftovers import STALE_TEMP_S, sweep_writer_temps

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "topics").mkdir(parents=True)
    return root


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def _temp(directory: Path, target: str, pid: int) -> Path:
    path = directory / f".{target}.{pid}.0badcafe.tmp"
    path.write_text("half of a rewrite", encoding="utf-8")
    return path


def test_a_dead_writers_temp_file_goes_at_the_next_lock(store: Path) -> None:
    dead = _dead_pid()
    leftovers = [
        _temp(store / "topics", "debugging.md", dead),
        _temp(store, "MEMORY.md", dead),
        _temp(store, "2026-03-14.md", dead),  # a new daily file's title
    ]
    with T.locked(store):
        pass
    assert [p for p in leftovers if p.exists()] == []


def test_a_live_writers_temp_file_stays(store: Path) -> None:
    # This process is alive and could be mid-write in another thread.
    mine = _temp(store / "topics", "debugging.md", os.getpid())
    parent = _temp(store, "MEMORY.md", os.getppid())
    T.add(store, content="a fact", topic="debugging", title="One", today=TOPIC_DAY)
    assert mine.exists() and parent.exists()


def test_a_temp_file_of_a_reused_pid_goes_once_it_is_stale(store: Path) -> None:
    reused = _temp(store / "topics", "debugging.md", os.getppid())
    fresh = _temp(store / "topics", "other.md", os.getppid())
    stamp = fresh.stat().st_mtime - STALE_TEMP_S - 60
    os.utime(reused, (stamp, stamp))
    with T.locked(store):
        pass
    assert not reused.exists()
    assert fresh.exists()


def test_only_memlanes_own_temp_names_are_touched(store: Path) -> None:
    dead = _dead_pid()
    kept = [
        store / f".notes.txt.{dead}.0badcafe.tmp",  # not a store file's name
        store / f".debugging.md.{dead}.zzzz.tmp",  # not memlane's hex suffix
        store / ".MEMORY.md.swp",
        store / f".MEMORY.md.{dead}.0badcafe.dream.tmp",  # the dream intents' to settle
        store / "topics" / "notes.tmp",
    ]
    for path in kept:
        path.write_text("x", encoding="utf-8")
    outside = store.parent / "elsewhere.md"
    outside.write_text("not the store's", encoding="utf-8")
    link = store / f".MEMORY.md.{dead}.0badcafe.tmp"
    link.symlink_to(outside)
    with T.locked(store):
        pass
    assert all(p.exists() for p in kept)
    assert link.is_symlink() and outside.read_text(encoding="utf-8") == "not the store's"


def test_without_a_filesystem_time_only_dead_writers_go(store: Path) -> None:
    old = _temp(store, "MEMORY.md", os.getppid())
    os.utime(old, (0, 0))
    dead = _temp(store, "2026-03-14.md", _dead_pid())
    assert sweep_writer_temps([store], None) == [dead]
    assert old.exists()


def test_a_killed_removals_temp_file_goes_at_the_next_removal(store: Path) -> None:
    daily = store / "2026-03-14.md"
    daily.write_text("# 2026-03-14\n\n### 09:00\n- keep me\n\n### 10:00\n- drop me\n")
    left = store / ".2026-03-14.md.forget-k9x_2ab1.tmp"
    left.write_text("# 2026-03-14\n\n### 09:00\n- keep me\n", encoding="utf-8")
    forget_entry(store, "2026-03-14", "10:00")
    assert not left.exists()
    assert daily.read_text(encoding="utf-8") == "# 2026-03-14\n\n### 09:00\n- keep me\n"


# --- real processes killed at the step -----------------------------------------------------


def _topic_add(
    project: Path, title: str, kill: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**LEXICAL, **({"MEMLANE_FAULT_KILL": kill} if kill else {})}
    return run_memlane(
        "topic",
        "add",
        f"fact of {title}",
        "--topic",
        "debugging",
        "--title",
        title,
        cwd=project,
        env=env,
    )


@pytest.mark.subprocess
@pytest.mark.parametrize("step", ["topic.temp_written", "topic.temp_written@2"])
def test_kill_9_during_topic_add_leaves_a_temp_file_the_next_add_removes(
    tmp_path: Path, step: str
) -> None:
    project = make_project(tmp_path)
    assert _topic_add(project, "First").returncode == 0
    topics = project / ".memsearch" / "memory" / "topics"
    before = (topics / "debugging.md").read_text(encoding="utf-8")

    killed = _topic_add(project, "Second", kill=step)
    assert killed.returncode == -signal.SIGKILL
    left = [p for p in topics.parent.rglob(".*.tmp")]
    assert len(left) == 1, left  # the killed writer's temporary file
    if step == "topic.temp_written":  # killed before the topic file's rename
        assert (topics / "debugging.md").read_text(encoding="utf-8") == before

    done = _topic_add(project, "Third")
    assert done.returncode == 0, done.stderr
    assert list(topics.parent.rglob(".*.tmp")) == []
    text = (topics / "debugging.md").read_text(encoding="utf-8")
    assert "## First" in text and "## Third" in text
    index = (topics.parent / "MEMORY.md").read_text(encoding="utf-8")
    assert "First" in index and "Third" in index


@pytest.mark.subprocess
def test_kill_9_during_forget_leaves_the_file_whole_and_the_next_forget_cleans_up(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True)
    daily = store / "2026-03-14.md"
    original = (
        "# 2026-03-14\n\n### 09:00\n- keep me\n\n### 10:00\n- drop me\n\n### 11:00\n- me too\n"
    )
    daily.write_text(original, encoding="utf-8")
    killed = run_memlane(
        "forget",
        "--date",
        "2026-03-14",
        "--time",
        "10:00",
        cwd=project,
        env={**LEXICAL, "MEMLANE_FAULT_KILL": "forget.temp_written"},
    )
    assert killed.returncode == -signal.SIGKILL
    assert daily.read_text(encoding="utf-8") == original
    assert len(list(store.glob(".*.forget-*.tmp"))) == 1
    done = run_memlane(
        "forget", "--date", "2026-03-14", "--time", "11:00", cwd=project, env=LEXICAL
    )
    assert done.returncode == 0, done.stderr
    assert list(store.glob(".*.tmp")) == []
    assert daily.read_text(encoding="utf-8") == (
        "# 2026-03-14\n\n### 09:00\n- keep me\n\n### 10:00\n- drop me\n"
    )
