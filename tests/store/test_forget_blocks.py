"""store/forget_locate.py's ``blocks``: a daily file's parts by the rules a removal uses."""

from __future__ import annotations

from pathlib import Path

from memlane.store.forget_locate import blocks, locate_time, parse_time

DAILY = b"""# 2026-11-30

## Session 09:00

### 09:00
<!-- session:s1 turn:t1 transcript:/x.jsonl -->
- the agent moved the cache to Redis

## Memory Compact 10:30

### Decisions
- keep Redis

### Open questions
- TTLs per key?

### 10:45
- an entry appended after the compact block

## Notes

Written by hand: call the billing team.

### 10:45
- a second entry at 10:45
"""


def test_blocks_are_the_spans_forget_removes_and_hand_written_sections_too() -> None:
    found = blocks(DAILY)
    assert [(b.kind, b.address) for b in found] == [
        ("entry", "09:00#1"),
        ("compact", "10:30#1"),
        ("entry", "10:45#1"),
        ("other", ""),
        ("entry", "10:45#2"),
    ]
    lines = DAILY.split(b"\n")
    compact = found[1]
    shown = b"\n".join(lines[compact.first : compact.last + 1])
    assert b"### Decisions" in shown and b"TTLs per key?" in shown  # the whole block
    assert b"appended after" not in shown
    notes = found[3]
    assert b"call the billing team" in b"\n".join(lines[notes.first : notes.last + 1])
    # Each removable block is exactly what forget finds at its address.
    for block in found:
        if block.kind == "other":
            continue
        span = locate_time(DAILY, parse_time(block.address), Path("2026-11-30.md"))
        assert (span.first, span.last, span.kind) == (block.first, block.last, block.kind)


def test_headings_alone_are_no_block() -> None:
    assert blocks(b"# 2026-11-30\n\n## Session 09:00\n\n") == []
