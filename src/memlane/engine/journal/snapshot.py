"""The stable snapshot: the block a host appends to the system prompt.

Usage instructions, then the tail of today's daily file and the tail of
yesterday's, each cut at an entry boundary (reference: pi-memsearch
"Stable snapshot"). It is rebuilt only at the session's checkpoints
(start, local-date rollover, compaction, a redaction) and is byte-identical
in between, so a provider's prompt prefix cache survives every turn:
building it is a pure function of the two files and the date.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from memlane.core.errors import StoreError
from memlane.store.daily import daily_path
from memlane.store.section import read_markdown

# An entry starts at its "### HH:MM" heading; a session block at "## ...".
# Cutting only there keeps every included entry whole, anchor and all.
_ENTRY_START_RE = re.compile(r"^#{2,3} ", re.MULTILINE)
CUT_MARKER = "[… earlier entries of this day omitted]"
ENTRY_CUT_MARKER = "[… entry cut]"

USAGE = """\
## Project memory (memlane)
Past sessions of this project are remembered as markdown notes. Recall works in
three steps; stop at the first that answers:
1. memory_search(query): the best matching notes, each with a chunk hash.
2. memory_expand(chunk_hash): the whole note section and its session anchor.
3. memory_transcript(transcript_path, turn): the original conversation around it.
Use memory_write to record a decision or fact worth keeping. Recent notes follow;
they may be incomplete, so search before assuming something was never done."""


@dataclass(frozen=True)
class Snapshot:
    text: str
    day: date  # the local date it was built for; a new day means a rebuild

    def contains(self, content: str) -> bool:
        """True when *content* already appears verbatim in the snapshot."""
        stripped = content.strip()
        return bool(stripped) and stripped in self.text


def tail_at_entry_boundary(text: str, limit: int) -> str:
    """The longest run of whole trailing entries that fits in *limit* characters.

    When even the last entry is longer than the limit, its beginning (the
    heading and anchor that make it addressable) is kept, cut at the limit.
    """
    text = text.strip("\n")
    if limit <= 0 or not text:
        return ""
    if len(text) <= limit:
        return text
    starts = [m.start() for m in _ENTRY_START_RE.finditer(text)]
    for start in starts:
        if len(text) - start <= limit:
            return f"{CUT_MARKER}\n{text[start:]}"
    last = starts[-1] if starts else 0
    room = max(0, limit - len(ENTRY_CUT_MARKER) - 1)
    return f"{CUT_MARKER}\n{text[last : last + room].rstrip()}\n{ENTRY_CUT_MARKER}"


def _day_block(store_dir: Path, day: date, label: str, limit: int) -> str | None:
    path = daily_path(store_dir, day)
    if not os.path.lexists(path):
        return None
    try:
        # A linked daily file is refused here, so no file outside the
        # store ever reaches the system prompt (store/safe_paths.py).
        text = read_markdown(path, store_dir)
    except StoreError as exc:
        return f"### {label} ({day.isoformat()})\n(could not be read: {exc.message})"
    # The file's own "# YYYY-MM-DD" title is redundant under our label.
    body = re.sub(r"\A# \d{4}-\d{2}-\d{2}\n", "", text.lstrip("\ufeff"))
    tail = tail_at_entry_boundary(body, limit)
    if not tail:
        return None
    return f"### {label} ({day.isoformat()})\n{tail}"


def build_snapshot(
    store_dir: Path,
    today: date,
    *,
    today_chars: int,
    yesterday_chars: int,
    extra_blocks: Sequence[str] = (),
) -> Snapshot:
    """The snapshot for *today* (a local date) from the store's daily files.

    ``extra_blocks`` (the curated-topics index, the sessions primer) go
    between the usage lines and the journal tails.
    """
    blocks = [USAGE, *(b.strip("\n") for b in extra_blocks if b and b.strip())]
    journal_start = len(blocks)
    for block in (
        _day_block(store_dir, today - timedelta(days=1), "Yesterday", yesterday_chars),
        _day_block(store_dir, today, "Today", today_chars),
    ):
        if block:
            blocks.append(block)
    if len(blocks) == journal_start:
        blocks.append("(no notes yet today or yesterday)")
    return Snapshot(text="\n\n".join(blocks) + "\n", day=today)
