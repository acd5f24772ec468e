"""The capture log file (engine/journal/capture_log.py): what a kill leaves is read back safely."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from helpers import NOW
from memlane.core.types import Anchor
from memlane.engine.journal import capture_log as cl
from memlane.engine.journal import capture_recovery as cr


def _pending(n: int, text: str = "", *, at_offset_days: int = 0) -> cl.Pending:
    return cl.Pending(
        key=f"k{n}",
        anchor=Anchor(session="dead-session", turn=f"t{n}", transcript="/tmp/t/dead.jsonl"),
        at=NOW + timedelta(days=at_offset_days),
        user=f"question {n} {text}",
        assistant=f"answer {n}",
    )


def _new_log(directory: Path) -> cl.CaptureLog:
    return cl.CaptureLog.create(directory, {"session": "dead-session", "host": "test"})


def _only_file(directory: Path) -> Path:
    files = sorted(directory.glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def test_a_torn_last_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    log.append(_pending(1))
    log.append(_pending(2))
    log.close()  # what a kill leaves: unlocked, two entries pending
    path = _only_file(tmp_path)
    with path.open("ab") as handle:  # the kill came in the middle of a third append
        handle.write(b'{"kind":"pending","key":"k3","session":"dead-se')
    contents = cl.parse(path.read_bytes())
    assert list(contents.pending) == ["k1", "k2"] and contents.damaged == 1

    [adopted] = cr.adopt_orphans(tmp_path)
    assert [p.key for p in adopted.pending] == ["k1", "k2"]
    adopted.mark_done("k1", cl.DISTILLED)
    # The done mark is a line of its own, after the torn fragment.
    again = cl.parse(path.read_bytes())
    assert list(again.pending) == ["k2"] and again.damaged == 1
    adopted.mark_done("k2", cl.DIGEST)
    assert not path.exists()  # an adopted log is deleted once everything is written


def test_garbled_lines_are_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    item = _pending(1)
    data = (
        b"not json at all\n"
        + json.dumps(item.to_json()).encode()
        + b"\n"
        + b'{"kind":"pending","key":"k2"}\n'  # fields missing
        + b'{"kind":"surprise"}\n'
        + b"\xff\xfe\n"
    )
    contents = cl.parse(data)
    assert list(contents.pending) == ["k1"] and contents.damaged == 4
    assert contents.pending["k1"] == item


def test_a_log_its_owner_holds_is_never_adopted(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    log.append(_pending(1))
    # flock locks belong to an open file: another session in this very
    # process is refused just as another process is.
    assert list(cr.adopt_orphans(tmp_path)) == []
    log.close()
    [adopted] = cr.adopt_orphans(tmp_path)
    assert list(cr.adopt_orphans(tmp_path)) == []  # now the adopter holds it
    adopted.close()


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.subprocess
def test_a_log_held_by_another_live_process_is_not_adopted(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    log.append(_pending(1))
    log.close()
    path = _only_file(tmp_path)
    # Another process holds the lock, as a live session's sidecar does.
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        assert list(cr.adopt_orphans(tmp_path)) == []
        holder.send_signal(signal.SIGKILL)  # the kernel lets go of the lock with the process
        holder.wait(10)
        [adopted] = cr.adopt_orphans(tmp_path)
        assert [p.key for p in adopted.pending] == ["k1"]
        adopted.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_the_owner_empties_its_log_when_nothing_is_pending(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    path = _only_file(tmp_path)
    header_size = path.stat().st_size
    log.append(_pending(1))
    log.append(_pending(2))
    log.mark_done("k1", cl.DISTILLED)
    assert path.stat().st_size > header_size
    log.mark_done("k2", cl.DISTILLED)
    assert path.stat().st_size == header_size
    assert cl.parse(path.read_bytes()).header is not None
    log.close()
    assert not path.exists()  # a clean close with nothing pending leaves nothing


def test_done_records_are_compacted_away_and_the_file_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cl, "COMPACT_DONE_BYTES", 4096)
    log = _new_log(tmp_path)
    filler = "x" * 500
    log.append(_pending(0, filler))  # pending the whole time: the file is never emptied
    sizes = []
    for n in range(1, 60):
        log.append(_pending(n, filler))
        log.mark_done(f"k{n}", cl.DISTILLED)
        sizes.append(_only_file(tmp_path).stat().st_size)
    assert max(sizes) < 4096 + 4 * 700  # header, the pending entry, the threshold, one record
    path = _only_file(tmp_path)
    assert list(cl.parse(path.read_bytes()).pending) == ["k0"]
    # The rewritten file is still this owner's: nobody may adopt it.
    assert list(cr.adopt_orphans(tmp_path)) == []
    log.close()
    [adopted] = cr.adopt_orphans(tmp_path)
    assert [p.key for p in adopted.pending] == ["k0"]
    adopted.close()


def test_leftovers_of_a_dead_owner_are_cleaned(tmp_path: Path) -> None:
    live = _new_log(tmp_path)  # a running session's: kept
    live_path = _only_file(tmp_path)
    # A session that died with everything written: its log is only a header.
    empty = tmp_path / "4242-deadbeef.jsonl"
    empty.write_text(json.dumps({"kind": "journal", "pid": 4242, "session": "x"}) + "\n")
    # A compaction's temporary file whose writer died before the rename.
    temp = tmp_path / f".{empty.name}.abcd1234{cl.TEMP_SUFFIX}"
    temp.write_bytes(b"half a rewrite")
    # The recovered counts being written right now by another process: not a log's.
    counts = tmp_path / f".{cr.STATS_NAME}.{os.getpid()}.0badcafe{cl.TEMP_SUFFIX}"
    counts.write_bytes(b'{"recovered": 1}')
    assert list(cr.adopt_orphans(tmp_path)) == []
    assert not empty.exists() and not temp.exists()
    assert live_path.exists() and counts.exists()
    live.close()


def test_long_texts_are_logged_as_their_redacted_head(tmp_path: Path) -> None:
    secret = "sk-ant-api03-" + "a1B2c3D4e5" * 9
    text = f"the key is {secret}\n" + "ordinary line of log output\n" * 3000
    copy, clipped = cl.log_copy(text)
    assert clipped and secret not in copy and "[REDACTED:" in copy
    assert len(copy) <= cl.LOG_TEXT_CHARS + len(cl.CLIPPED_NOTE) + 1
    assert copy.endswith(cl.CLIPPED_NOTE)
    assert "ordinary line of log output\n" in copy  # cut at a line break, never inside a line
    short, was_clipped = cl.log_copy(f"deploy with {secret} now")
    assert not was_clipped and secret not in short and short.startswith("deploy with ")
    # A <private> block the cut leaves open is dropped to the end of the head.
    private = "public part\n<private>\n" + "hidden words\n" * 5000 + "</private>\nafter"
    head, _ = cl.log_copy(private)
    assert "hidden words" not in head and head.startswith("public part")
    lone, _ = cl.log_copy("emoji cut in half \ud83d")
    assert lone == "emoji cut in half \ufffd"  # JSON on disk must be valid UTF-8


def test_an_entry_already_in_a_daily_file_is_recognised(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    item = _pending(7)
    day = NOW.date()
    anchor = item.anchor.render()
    assert not cr.already_written(store, item)
    # An anchor of the same session with another turn is a different entry.
    other = Anchor(session="dead-session", turn="t77", transcript="/x").render()
    (store / f"{day.isoformat()}.md").write_text(f"# {day}\n\n### 10:00\n{other}\n- a\n")
    assert not cr.already_written(store, item)
    # A file of the day before the exchange cannot hold it.
    before = day - timedelta(days=1)
    (store / f"{before.isoformat()}.md").write_text(f"# {before}\n\n### 10:00\n{anchor}\n- a\n")
    assert not cr.already_written(store, item)
    after = day + timedelta(days=1)  # written just after midnight
    (store / f"{after.isoformat()}.md").write_text(f"# {after}\n\n### 00:01\n{anchor}\n- a\n")
    assert cr.already_written(store, item)


def test_recovered_counts_and_waiting_entries_make_the_status_line(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    log.append(_pending(1))
    assert cr.summary(tmp_path)["queued"] == 1  # its owner (this process) is alive
    log.close()
    cr.note_recovered(tmp_path, cl.DISTILLED)
    cr.note_recovered(tmp_path, cl.DIGEST)
    cr.note_recovered(tmp_path, cl.FOUND)
    summary = cr.summary(tmp_path)
    assert summary["recovered"] == 2 and summary["recovered_as_digest"] == 1
    assert summary["found_written"] == 1 and summary["queued"] == 1
    assert cr.status_line(summary).startswith("recovered 2 (1 as digest, 1 found already written)")


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_rolls_the_append_back_and_says_so(tiny_tmpfs: Path) -> None:
    log = _new_log(tiny_tmpfs)
    log.append(_pending(1))
    path = _only_file(tiny_tmpfs)
    before = path.read_bytes()
    filler = tiny_tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 1024):
            pass
    except OSError:
        pass  # the disk is full
    finally:
        os.close(fd)
    with pytest.raises(cl.CaptureLogError, match="the disk is full"):
        log.append(_pending(2, "y" * 20_000))
    assert path.read_bytes() == before  # nothing torn is left behind
    assert [p.key for p in log.pending] == ["k1"]
    filler.unlink()
    log.append(_pending(3))
    assert list(cl.parse(path.read_bytes()).pending) == ["k1", "k3"]
    log.close()


def test_a_written_exchange_leaves_no_copy_of_its_text_in_the_log(tmp_path: Path) -> None:
    # Forget promises no copy anywhere: once an entry is in the daily file,
    # the log blanks its record out, even while others are pending.
    log = _new_log(tmp_path)
    log.append(_pending(1, "kumquat-one"))
    log.append(_pending(2, "kumquat-two"))
    log.mark_done("k1", cl.DISTILLED)
    data = _only_file(tmp_path).read_bytes()
    assert b"kumquat-one" not in data and b"kumquat-two" in data
    contents = cl.parse(data)
    assert list(contents.pending) == ["k2"] and contents.damaged == 0
    log.close()
    [adopted] = cr.adopt_orphans(tmp_path)  # what a kill now would leave
    assert [p.key for p in adopted.pending] == ["k2"]
    adopted.mark_done("k2", cl.DIGEST)
