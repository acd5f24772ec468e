"""``damage_in`` reads a file again whenever it changed, and only then."""

from __future__ import annotations

import os
from pathlib import Path

from memlane.store.damage import damage_in

TORN = "# 2026-11-30\n\n### 10:00\n<!-- session:s turn:t transcript:/tmp/t\n- a torn entry\n"
WHOLE = "# 2026-11-30\n\n### 10:00\n<!-- session:s turn:t transcript:/tmp/t -->\n- whole\n"


def test_a_changed_file_is_read_again_and_an_unchanged_one_keeps_its_answer(
    tmp_path: Path,
) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    daily = store / "2026-11-30.md"
    daily.write_text(TORN, encoding="utf-8")
    first = damage_in(store, [daily])
    assert [line.line for line in first] == [4]
    assert damage_in(store, [daily]) == first
    daily.write_text(WHOLE, encoding="utf-8")
    assert damage_in(store, [daily]) == []
    # The same size and a modification time set back: still a different inode
    # after a replace, so it is read again.
    replacement = store / ".tmp"
    replacement.write_text(TORN.replace("torn entry", "torn-entry"), encoding="utf-8")
    stat = daily.stat()
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, daily)
    assert [line.line for line in damage_in(store, [daily])] == [4]


def test_a_file_turned_into_a_link_is_refused_again(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    daily = store / "2026-11-30.md"
    daily.write_text(TORN, encoding="utf-8")
    assert damage_in(store, [daily])
    outside = tmp_path / "elsewhere.md"
    outside.write_text(TORN, encoding="utf-8")
    daily.unlink()
    daily.symlink_to(outside)
    assert damage_in(store, [daily]) == []  # a link is not read (store/safe_paths.py)
