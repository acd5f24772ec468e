"""Daily files and entries: their shapes and the concurrent-writer contract."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from helpers import wait_for
from memlane.core.errors import StoreError
from memlane.core.types import Anchor
from memlane.store import daily
from memlane.store.anchor import parse_anchor
from memlane.store.chunker import chunk_markdown
from memlane.store.daily import DailyWriter, daily_path, format_entry, new_entry_id

SESSION = "3f2c9b1e-7d41-4c1a-9b55-0c1d2e3f4a5b"
TRANSCRIPT = "/home/you/.pi/agent/sessions/--proj--/2026-08-13_3f2c9b1e.jsonl"
NOW = datetime(2026, 8, 13, 22, 41, 7)


def anchor(turn: str = "ab12cd34", session: str = SESSION) -> Anchor:
    return Anchor(session=session, turn=turn, transcript=TRANSCRIPT)


# --- format_entry -------------------------------------------------------------


def test_entry_shape_from_design() -> None:
    text = "the user and the agent moved the hot cache to Redis with 5 minute TTLs"
    assert format_entry("22:41", anchor(), text) == (
        "### 22:41\n"
        f"<!-- session:{SESSION} turn:ab12cd34 transcript:{TRANSCRIPT} -->\n"
        "- the user and the agent moved the hot cache to Redis with 5 minute TTLs\n"
    )


def test_lines_become_bullets_and_existing_bullets_are_kept() -> None:
    text = "- already a bullet\n* star\n+ plus\n  - nested keeps indent  \nplain\n\n   \n  indented plain\r\nlast"
    assert format_entry("09:05", None, text) == (
        "### 09:05\n"
        "- already a bullet\n"
        "* star\n"
        "+ plus\n"
        "  - nested keeps indent\n"
        "- plain\n"
        "- indented plain\n"
        "- last\n"
    )


def test_heading_like_text_cannot_open_a_section() -> None:
    entry = format_entry("09:05", None, "## not a heading\n### 10:00")
    assert entry == "### 09:05\n- ## not a heading\n- ### 10:00\n"


@pytest.mark.parametrize("text", ["", "   ", "\n\n", " \t\r\n "])
def test_empty_text_is_refused(text: str) -> None:
    with pytest.raises(StoreError, match="nothing to write"):
        format_entry("09:05", None, text)


@pytest.mark.parametrize("bad", ["9:05", "24:00", "12:60", "12-30", "", "12:30:00"])
def test_bad_time_is_refused(bad: str) -> None:
    with pytest.raises(StoreError, match="invalid entry time"):
        format_entry(bad, None, "text")


def test_new_entry_id_and_daily_path() -> None:
    ids = {new_entry_id() for _ in range(200)}
    assert len(ids) > 190
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert daily_path(Path("/s"), date(2026, 1, 2)) == Path("/s/2026-01-02.md")


# --- DailyWriter ------------------------------------------------------------


def test_new_file_gets_title_then_session_heading_once(tmp_path: Path) -> None:
    store = tmp_path / "nested" / ".memsearch" / "memory"  # created on demand
    writer = DailyWriter()
    first = writer.append(store, "moved the cache to Redis", anchor("t1"), NOW, SESSION)
    second = writer.append(
        store, "added jitter to TTLs", anchor("t2"), NOW.replace(minute=52), SESSION
    )
    path = store / "2026-08-13.md"
    assert first.path == str(path)
    assert first.session_heading_written and not second.session_heading_written
    assert (first.time, second.time) == ("22:41", "22:52")
    expected = (
        "# 2026-08-13\n"
        "\n"
        "## Session 22:41\n"
        "### 22:41\n"
        f"<!-- session:{SESSION} turn:t1 transcript:{TRANSCRIPT} -->\n"
        "- moved the cache to Redis\n"
        "\n"
        "### 22:52\n"
        f"<!-- session:{SESSION} turn:t2 transcript:{TRANSCRIPT} -->\n"
        "- added jitter to TTLs\n"
    )
    assert path.read_text(encoding="utf-8") == expected
    assert expected == "# 2026-08-13\n" + first.text + second.text  # Entry.text is verbatim
    assert first.anchor == anchor("t1")
    assert not list(store.glob(".*"))  # no temporary file left behind


def test_resumed_session_in_fresh_writer_does_not_repeat_heading(tmp_path: Path) -> None:
    DailyWriter().append(tmp_path, "first", anchor("t1"), NOW, SESSION)
    resumed = DailyWriter().append(tmp_path, "second", anchor("t2"), NOW, SESSION)
    assert not resumed.session_heading_written
    text = (tmp_path / "2026-08-13.md").read_text(encoding="utf-8")
    assert text.count("## Session") == 1


def test_seed_matches_whole_session_id_not_a_prefix(tmp_path: Path) -> None:
    DailyWriter().append(tmp_path, "by abcd", anchor(session="abcd"), NOW, "abcd")
    other = DailyWriter().append(tmp_path, "by abc", anchor(session="abc"), NOW, "abc")
    assert other.session_heading_written


def test_heading_decision_reads_the_file_once_per_session(tmp_path: Path) -> None:
    path = tmp_path / "2026-08-13.md"
    # The first write of a session reads the file: a session it already
    # anchors (written by an earlier process) gets no second heading.
    earlier = format_entry("21:00", anchor("t0"), "x")
    path.write_text(f"# 2026-08-13\n\n## Session 21:00\n{earlier}", encoding="utf-8")
    writer = DailyWriter()
    resumed = writer.append(tmp_path, "resumed", anchor("t1"), NOW, SESSION)
    assert not resumed.session_heading_written
    # From then on the decision is this writer's own state, not another read:
    # with the file emptied under it, it still writes no second heading...
    path.write_text("# 2026-08-13\n", encoding="utf-8")
    for n in range(2, 5):
        entry = writer.append(tmp_path, f"entry {n}", anchor(f"t{n}"), NOW, SESSION)
        assert not entry.session_heading_written
    # ...while a session it has not written yet reads the file once more.
    other = writer.append(tmp_path, "other session", anchor(session="s2"), NOW, "s2")
    assert other.session_heading_written
    path.write_text("# 2026-08-13\n", encoding="utf-8")
    again = writer.append(tmp_path, "again", anchor(session="s2"), NOW, "s2")
    assert not again.session_heading_written
    assert "## Session" not in path.read_text(encoding="utf-8")


def test_each_session_and_each_day_gets_its_own_heading(tmp_path: Path) -> None:
    writer = DailyWriter()
    a = writer.append(tmp_path, "a", anchor(session="s1"), NOW, "s1")
    b = writer.append(tmp_path, "b", anchor(session="s2"), NOW, "s2")
    c = writer.append(tmp_path, "c", anchor(session="s1"), datetime(2026, 8, 14, 0, 1), "s1")
    assert a.session_heading_written and b.session_heading_written and c.session_heading_written
    assert (
        (tmp_path / "2026-08-14.md")
        .read_text(encoding="utf-8")
        .startswith("# 2026-08-14\n\n## Session 00:01\n### 00:01\n")
    )


def test_no_session_means_no_session_heading(tmp_path: Path) -> None:
    entry = DailyWriter().append(tmp_path, "a note", None, NOW, None)
    assert entry.text == "\n### 22:41\n- a note\n"
    assert not entry.session_heading_written


def test_aware_time_is_written_in_local_time(tmp_path: Path) -> None:
    now = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
    entry = DailyWriter().append(tmp_path, "x", None, now, None)
    local = now.astimezone()
    assert entry.time == local.strftime("%H:%M")
    assert Path(entry.path).name == f"{local.date().isoformat()}.md"


def test_existing_file_is_appended_to_as_is(tmp_path: Path) -> None:
    path = tmp_path / "2026-08-13.md"
    path.write_text("hand-written, no trailing newline", encoding="utf-8")
    DailyWriter().append(tmp_path, "x", None, NOW, None)
    assert path.read_text(encoding="utf-8") == (
        "hand-written, no trailing newline\n### 22:41\n- x\n"
    )


def test_written_entries_chunk_into_one_chunk_each_with_their_anchor(tmp_path: Path) -> None:
    writer = DailyWriter()
    anchors = [anchor(f"t{n}") for n in range(3)]
    for n, a in enumerate(anchors):
        writer.append(tmp_path, f"fact {n}\n- detail {n}", a, NOW.replace(minute=n), SESSION)
    path = tmp_path / "2026-08-13.md"
    chunks = chunk_markdown(path.read_text(encoding="utf-8"), str(path), "m")
    assert [c.heading for c in chunks] == ["22:00", "22:01", "22:02"]
    assert [parse_anchor(c.content) for c in chunks] == anchors


def test_write_failures_are_store_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(StoreError, match="cannot write memory file"):
        DailyWriter().append(blocker / "memory", "x", None, NOW, None)


def test_short_write_is_an_error_not_a_second_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "2026-08-13.md").write_text("# 2026-08-13\n", encoding="utf-8")
    calls: list[int] = []
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real_write(fd, data[:3])

    monkeypatch.setattr(daily.os, "write", short_write)
    with pytest.raises(StoreError, match=r"short write.*the file is unchanged"):
        DailyWriter().append(tmp_path, "x", None, NOW, None)
    assert len(calls) == 1
    # the three bytes that were written are rolled back (store/durable.append_whole)
    assert (tmp_path / "2026-08-13.md").read_text(encoding="utf-8") == "# 2026-08-13\n"


# --- real processes racing on one file ---------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from datetime import datetime
    from pathlib import Path
    from memlane.core.types import Anchor
    from memlane.store.daily import DailyWriter

    store, proc, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    Path(f"{go}.ready{proc}").touch()  # imported, about to wait
    while not go.exists():  # every worker starts writing at the same instant
        time.sleep(0.0005)
    writer = DailyWriter()
    for k in range(50):
        body = f"proc {proc} entry {k}\\n" + "x" * ((proc * 997 + k * 389) % 6000)
        anchor = Anchor(f"sess{proc}", f"{proc}-{k}", f"/t/{proc}.jsonl")
        writer.append(store, body, anchor, datetime(2026, 8, 13, 10, proc), f"sess{proc}")
    """
)


@pytest.mark.subprocess
def test_concurrent_processes_never_interleave_or_lose_entries(tmp_path: Path) -> None:
    workers, per_worker = 6, 50
    go = tmp_path.parent / f"{tmp_path.name}.go"  # outside the store: the start signal
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path), str(p), str(go)],
            stderr=subprocess.PIPE,
        )
        for p in range(workers)
    ]
    ready = [Path(f"{go}.ready{p}") for p in range(workers)]
    wait_for(lambda: all(r.exists() for r in ready), timeout=60, what="workers ready")
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()

    text = (tmp_path / "2026-08-13.md").read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[0] == "# 2026-08-13"
    assert lines.count("# 2026-08-13") == 1
    assert text.endswith("\n")

    seen: dict[int, list[int]] = defaultdict(list)
    headings: dict[int, int] = defaultdict(int)
    blocks = text[: -len("\n")].split("\n\n")  # entries are separated by one blank line
    assert blocks[0] == "# 2026-08-13"
    for block in blocks[1:]:
        rows = block.split("\n")
        if rows[0].startswith("## Session 10:"):
            proc = int(rows[0][-2:])
            headings[proc] += 1
            assert not seen[proc], "session heading after the session's first entry"
            rows = rows[1:]
        time_, anchor_line, first, *rest = rows
        found = parse_anchor(anchor_line)
        assert found is not None, block[:200]
        proc, k = map(int, found.turn.split("-"))
        assert time_ == f"### 10:{proc:02d}"
        assert first == f"- proc {proc} entry {k}"
        size = (proc * 997 + k * 389) % 6000
        assert rest == ([f"- {'x' * size}"] if size else []), "entries interleaved"
        seen[proc].append(k)

    for proc in range(workers):
        assert seen[proc] == list(range(per_worker)), f"worker {proc} lost or reordered entries"
        assert headings[proc] == 1
