"""Appends on a full disk are all or nothing (issue 14, item 1), on a real tmpfs.

A write cut short by ENOSPC used to leave half an entry in the daily file:
half an anchor, or half a multi-byte character, which then cost the whole
day its place in search. Now the torn bytes are cut off again under the
file's lock and the caller is told the disk is full.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import wait_for
from memlane.core.errors import DiskFullError
from memlane.core.locks import flocked
from memlane.core.types import Anchor
from memlane.engine.journal.maintenance import append_compact_block
from memlane.store.daily import DailyWriter, daily_path
from memlane.store.damage import check_bytes

NOW = datetime(2026, 8, 13, 22, 41, 7)
JAPANESE = "日本語のテキストがディスクを満たす。"


def _fill_a_daily_file(store: Path) -> Path:
    writer = DailyWriter()
    for n in range(3):
        writer.append(store, f"entry {n} before the disk filled", None, NOW, "s1")
    return daily_path(store, NOW.date())


def test_an_entry_that_does_not_fit_is_rolled_back_and_the_error_says_disk_full(
    small_tmpfs: Any,
) -> None:
    fs = small_tmpfs("1m")
    store = fs.path / "memory"
    path = _fill_a_daily_file(store)
    fs.fill(leave=5000)
    before = path.read_bytes()
    anchor = Anchor(session="s1", turn="t9", transcript="/t/s1.jsonl")
    with pytest.raises(DiskFullError) as failure:
        DailyWriter().append(store, JAPANESE * 1000, anchor, NOW, "s1")
    assert path.read_bytes() == before
    assert str(failure.value).count("\n") == 0
    assert failure.value.message == (
        f"the disk holding {path} is full: the entry was not written; the file is unchanged"
    )
    assert failure.value.hint and f"df -h {store}" in failure.value.hint

    fs.free()
    DailyWriter().append(store, "after the disk was freed", None, NOW, "s1")
    data = path.read_bytes()
    assert data.startswith(before) and data.endswith(b"- after the disk was freed\n")
    assert check_bytes(data, path).damaged == ()


def test_a_day_whose_title_does_not_fit_leaves_no_file_behind(small_tmpfs: Any) -> None:
    fs = small_tmpfs("1m")
    store = fs.path / "memory"
    store.mkdir()
    fs.fill()
    with pytest.raises(DiskFullError, match="is full"):
        DailyWriter().append(store, "a first entry", None, NOW, None)
    assert list(store.iterdir()) == []  # neither the day nor its temp file


def test_a_compact_block_that_does_not_fit_is_rolled_back(small_tmpfs: Any) -> None:
    fs = small_tmpfs("1m")
    store = fs.path / "memory"
    path = _fill_a_daily_file(store)
    fs.fill(leave=3000)
    before = path.read_bytes()
    with pytest.raises(DiskFullError, match="the compact block was not written"):
        append_compact_block(store, "- a summary\n" * 2000, NOW)
    assert path.read_bytes() == before


def _fds_open_on(path: Path) -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == str(path):
                count += 1
        except OSError:
            continue
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see open files")
def test_an_appender_that_waited_for_a_replaced_file_writes_to_the_new_one(
    tmp_path: Path,
) -> None:
    # forget and status --fix rename a new copy over the daily file; an
    # appender queued on the old copy's lock must not write into it.
    path = _fill_a_daily_file(tmp_path)
    holder = os.open(path, os.O_RDONLY)
    try:
        with flocked(holder):
            writer = threading.Thread(
                target=DailyWriter().append, args=(tmp_path, "queued entry", None, NOW, None)
            )
            writer.start()
            wait_for(lambda: _fds_open_on(path) >= 2, what="the appender opened the file")
            replacement = tmp_path / "replacement"
            replacement.write_bytes(path.read_bytes() + b"\n- rewritten copy\n")
            os.replace(replacement, path)
        writer.join(timeout=30)
        assert not writer.is_alive()
        old = os.pread(holder, 1 << 20, 0)
    finally:
        os.close(holder)
    assert b"queued entry" not in old
    assert path.read_bytes().endswith(b"- rewritten copy\n\n### 22:41\n- queued entry\n")


# --- real processes appending while one append is rolled back ---------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from datetime import datetime
    from pathlib import Path
    from memlane.core.errors import DiskFullError
    from memlane.core.types import Anchor
    from memlane.store.daily import DailyWriter

    store, proc, go, big = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    Path(f"{go}.ready{proc}").touch()
    while not go.exists():
        time.sleep(0.0005)
    writer = DailyWriter()
    when = datetime(2026, 8, 13, 10, proc)
    refused = 0
    for k in range(40):
        anchor = Anchor(f"sess{proc}", f"{proc}-{k}", f"/t/{proc}.jsonl")
        if big == "big":
            try:
                writer.append(store, "日本語" * 150_000, anchor, when, f"sess{proc}")
            except DiskFullError:
                refused += 1
        else:
            writer.append(store, f"proc {proc} entry {k} " + "x" * 200, anchor, when, f"sess{proc}")
    print(refused)
    """
)


@pytest.mark.subprocess
def test_other_processes_entries_survive_an_append_rolled_back_beside_them(
    small_tmpfs: Any,
) -> None:
    fs = small_tmpfs("4m")
    store = fs.path / "memory"
    path = _fill_a_daily_file(store)
    fs.fill(leave=200_000)  # room for every small entry, never for a big one
    go = fs.path / "go"
    small, big = [0, 1, 2, 3], 4
    procs = {
        p: subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(store),
                str(p),
                str(go),
                "big" if p == big else "small",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in [*small, big]
    }
    wait_for(lambda: all(Path(f"{go}.ready{p}").exists() for p in procs), timeout=60)
    go.touch()
    outputs = {}
    for p, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs[p] = out.strip()
    assert outputs[big] == "40"  # every big append was refused...

    data = path.read_bytes()
    assert check_bytes(data, path).damaged == ()  # ...and left nothing torn behind
    text = data.decode("utf-8")
    assert "日本語" not in text
    for p in small:
        for k in range(40):
            assert f"\n- proc {p} entry {k} {'x' * 200}\n" in text, (p, k)
