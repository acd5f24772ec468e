"""Damaged lines: found, left out of the index without costing the file its
intact entries, and set aside into ``<file>.damaged`` (ADR 0002)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane.core.faults import KILL_ENV
from memlane.store.chunker import chunk_markdown
from memlane.store.damage import check_bytes, lines_to_set_aside
from memlane.store.repair import damaged_path_of, set_aside_file

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)

INTACT = (
    b"# 2026-11-30\n"
    b"\n"
    b"### 09:00\n"
    b"<!-- session:a turn:1 transcript:none -->\n"
    b"- first intact entry\n"
    b"\n"
    b"### 09:05\n"
    b"<!-- session:a turn:2 transcript:none -->\n"
    b"- second entry, its first bullet\n"
    b"- second entry, its last bullet\n"
    b"\n"
    b"### 09:10\n"
    b"<!-- session:a turn:3 transcript:none -->\n"
    b"- third intact entry\n"
)


def _with_line_replaced(data: bytes, number: int, new: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[number - 1] = new
    return b"\n".join(lines)


def test_a_clean_file_reads_as_it_is() -> None:
    checked = check_bytes(INTACT, "day.md")
    assert checked.text == INTACT.decode() and checked.damaged == ()


def test_invalid_utf8_empties_only_its_line_and_keeps_line_numbers() -> None:
    data = _with_line_replaced(INTACT, 9, b"- second entry, \xe3\x81 torn")
    checked = check_bytes(data, "day.md")
    [damaged] = checked.damaged
    offset = data.index(b"\xe3")
    assert (damaged.line, damaged.where) == (9, "day.md:9")
    assert damaged.reason == f"not valid UTF-8 (byte 0xe3 at offset {offset})"
    assert damaged.preview == "- second entry, \\xe3\\x81 torn"
    assert checked.text.split("\n")[8] == ""
    assert checked.text.split("\n")[9] == "- second entry, its last bullet"

    # the sections without damage chunk exactly as in the undamaged file
    clean = {c.chunk_hash for c in chunk_markdown(INTACT.decode(), "day.md", "m")}
    kept = {c.chunk_hash for c in chunk_markdown(checked.text, "day.md", "m")}
    assert len(clean & kept) == 2 and len(kept) == 3


def test_a_torn_anchor_is_damage_and_a_closed_comment_is_not() -> None:
    torn = INTACT + b"\n### 09:15\n<!-- session:cli turn:16"
    [damaged] = check_bytes(torn, "day.md").damaged
    assert damaged.line == 17 and "never closed" in damaged.reason

    # a comment over several lines that closes within its section is fine
    spanning = INTACT + b"\n### 09:20\n<!-- a note\nover lines -->\n- text\n"
    assert check_bytes(spanning, "day.md").damaged == ()
    # an unclosed "<!--" in the middle of a sentence is the user's text
    prose = INTACT + b"\n### 09:25\n- html comments start with <!-- like this\n"
    assert check_bytes(prose, "day.md").damaged == ()


def test_a_torn_anchor_followed_by_later_entries_is_found_in_its_section() -> None:
    # the full disk was freed and writing went on after the torn entry
    data = INTACT + b"\n### 09:15\n<!-- session:cli turn:16\n### 09:30\n- written later -->\n"
    checked = check_bytes(data, "day.md")
    assert [d.line for d in checked.damaged] == [17]
    assert "- written later -->" in checked.text


def test_what_is_set_aside_is_the_damage_and_the_headings_it_leaves_empty() -> None:
    torn_bullet = _with_line_replaced(INTACT, 14, b"- third \xe3\x81")
    # entry 09:10 had one bullet: its heading and anchor go along
    assert lines_to_set_aside(torn_bullet) == [11, 12, 13]
    # entry 09:05 keeps its other bullet, so only the damaged line moves
    one_of_two = _with_line_replaced(INTACT, 9, b"- \xff")
    assert lines_to_set_aside(one_of_two) == [8]
    assert lines_to_set_aside(INTACT) == []


def test_set_aside_moves_only_the_damage_and_appends_to_the_damaged_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "2026-11-30.md"
    path.write_bytes(_with_line_replaced(INTACT, 14, b"- third \xe3\x81"))
    moved = set_aside_file(tmp_path, path, NOW)
    assert moved is not None and moved.lines == (12, 13, 14)
    assert path.read_bytes() == INTACT[: INTACT.index(b"### 09:10")]
    aside = damaged_path_of(path)
    assert aside.read_bytes() == (
        b"# 3 line(s) set aside from 2026-11-30.md by `memlane status --fix` at "
        b"2026-11-30T10:00:00Z: 12, 13, 14\n"
        b"### 09:10\n<!-- session:a turn:3 transcript:none -->\n- third \xe3\x81\n"
    )
    assert set_aside_file(tmp_path, path, NOW) is None  # nothing left to move
    first = aside.read_bytes()
    path.write_bytes(path.read_bytes() + b"- \xff\n")
    assert set_aside_file(tmp_path, path, NOW) is not None
    assert aside.read_bytes().startswith(first)  # appended, never overwritten


KILLED_REPAIR = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from memlane.store.repair import set_aside_file
set_aside_file(Path(sys.argv[1]), Path(sys.argv[2]), datetime(2026, 11, 30, tzinfo=UTC))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "step", ["repair.locked", "repair.damaged_written", "repair.temp_written", "repair.renamed"]
)
def test_a_repair_killed_at_any_step_loses_nothing(tmp_path: Path, step: str) -> None:
    damaged = _with_line_replaced(INTACT, 14, b"- third \xe3\x81")
    path = tmp_path / "2026-11-30.md"
    path.write_bytes(damaged)
    env = {**os.environ, KILL_ENV: step}
    run = subprocess.run(
        [sys.executable, "-c", KILLED_REPAIR, str(tmp_path), str(path)],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == -9, run.stderr
    after = path.read_bytes()
    assert after in (damaged, INTACT[: INTACT.index(b"### 09:10")])  # the old file or the new
    aside = damaged_path_of(path)
    if after != damaged:
        assert b"- third \xe3\x81\n" in aside.read_bytes()  # moved lines are never lost
    # running it again finishes the job
    set_aside_file(tmp_path, path, NOW)
    assert path.read_bytes() == INTACT[: INTACT.index(b"### 09:10")]
    assert b"- third \xe3\x81\n" in aside.read_bytes()
