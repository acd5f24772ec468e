"""After ``forget`` no file memlane writes holds the forgotten text, not even a
damaged index moved aside by a rebuild (docs/hardening/copies.md, ADR 0011).

Every test greps every file under the store, the index-state directory and
``$MEMLANE_HOME`` (the index directory with its -wal/-shm files, caches,
traces) byte for byte.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from helpers import NOW, FixedClock, open_memory
from memlane.engine.project import Memory
from memlane.index.sqlite.sessions import sessions_path_for

SECRET = b"quokkazanzibar"
ENTRY = "the vault passphrase hint is quokkazanzibar, kept in the team safe"
KEEP = "the deploy runs on Fridays after the standup"


def _holding(roots: list[Path], needle: bytes = SECRET) -> list[Path]:
    """Every file under ``roots`` whose bytes hold ``needle`` (any case)."""
    found: list[Path] = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and needle in path.read_bytes().lower():
                found.append(path)
    return found


def _roots(mem: Memory, home: Path) -> list[Path]:
    roots = [mem.scope.store, home]
    if mem.scope.state_dir is not None:
        roots.append(mem.scope.state_dir)
    return roots


def _write_two(project: Path) -> None:
    with open_memory(project, clock=FixedClock(NOW)) as mem:
        mem.write(ENTRY, now=NOW)
        mem.write(KEEP, now=NOW + timedelta(minutes=5))
        mem.sync()


def _day_and_time() -> tuple[str, str]:
    local = NOW.astimezone()
    return local.date().isoformat(), local.strftime("%H:%M")


def test_forget_after_a_rebuild_leaves_no_copy_anywhere(project: Path, isolated_home: Path) -> None:
    _write_two(project)
    with open_memory(project) as mem:
        index_path = mem.internals.index_path
    # Damage the header only: the pages holding the entry's text stay in the file.
    with index_path.open("r+b") as handle:
        handle.write(b"not an sqlite header")
    assert SECRET in index_path.read_bytes().lower()

    with open_memory(project, clock=FixedClock(NOW)) as mem:
        mem.sync()  # meets the damage, rebuilds, re-indexes from the markdown
        assert mem.index.count() >= 2
        day, time = _day_and_time()
        removed = mem.forget(date=day, time=time)
        assert SECRET.decode() in removed.markdown and not removed.notices
        # (no close first: the index and its WAL are clean while memlane runs)
        held = _holding(_roots(mem, isolated_home))
    assert held == [], f"the forgotten text survives in {held}"
    with open_memory(project) as mem:
        assert KEEP in "".join(p.read_text() for p in mem.scope.store.glob("*.md"))


def test_forget_purges_copies_left_by_a_killed_rebuild_or_an_older_memlane(
    project: Path, isolated_home: Path
) -> None:
    _write_two(project)
    with open_memory(project, clock=FixedClock(NOW)) as mem:
        mem.index.count()  # open: the index exists, and any earlier leftovers went
        index_path = mem.internals.index_path
        # What a rebuild killed between its rename and its delete leaves behind,
        # for the markdown index and the sessions index alike.
        stamp = ".corrupt-20261130T100000.000000Z"
        left = [
            index_path.with_name(index_path.name + stamp),
            sessions_path_for(index_path).with_name(sessions_path_for(index_path).name + stamp),
        ]
        for copy in left:
            shutil.copyfile(index_path, copy)
        copy_wal = left[0].with_name(left[0].name + "-wal")
        copy_wal.write_bytes(b"wal page: " + SECRET)
        assert _holding([index_path.parent]) != []
        day, time = _day_and_time()
        mem.forget(date=day, time=time)
        held = _holding(_roots(mem, isolated_home))
    assert held == [], f"the forgotten text survives in {held}"
    assert not any(copy.exists() for copy in [*left, copy_wal])


def test_opening_an_index_removes_a_leftover_damaged_copy(
    project: Path, isolated_home: Path
) -> None:
    _write_two(project)
    with open_memory(project) as mem:
        index_path = mem.internals.index_path
    leftover = index_path.with_name(index_path.name + ".corrupt-20200101T000000.000000Z")
    shutil.copyfile(index_path, leftover)
    unrelated = index_path.with_name("ms_other_12345678.sqlite.corrupt-20200101T000000.000000Z")
    unrelated.write_bytes(b"another collection's business")
    with open_memory(project) as mem:
        assert mem.index.count() >= 2
    assert not leftover.exists()
    assert unrelated.exists()  # only this index's own copies are touched by its open
