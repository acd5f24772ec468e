"""Finding the one entry a removal means (store/forget.py does the removal).

An entry is found by a line inside it (a chunk's first line, from the index)
or by its heading's time in a daily file: ``14:03``, or ``14:03#2`` for the
second entry headed ``### 14:03`` in the file. Entries written in the same
minute share their heading, so a bare time that several headings carry is
refused, never guessed between; the refusal lists each of them with its
position, its first line and its chunk hash (when it has one), and says the
exact command that removes each. Nothing is matched fuzzily.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memlane.core.errors import NotFoundError, StoreError
from memlane.store.chunker import chunk_markdown
from memlane.store.markdown import heading_of

Kind = Literal["entry", "compact"]

_TIME_ADDRESS_RE = re.compile(r"^(?P<time>([01]\d|2[0-3]):[0-5]\d)(?:#(?P<nth>\d{1,6}))?$")
_ENTRY_TITLE_RE = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$")
_COMPACT_TITLE_RE = re.compile(r"^Memory Compact\b")
#: How much of an entry's first line a refusal shows.
PREVIEW_CHARS = 60


@dataclass(frozen=True)
class Span:
    """A located entry: lines ``[first, last]`` (0-based) and byte range."""

    first: int
    last: int
    start: int  # byte offsets into the file's content
    end: int
    kind: Kind


@dataclass(frozen=True)
class TimeAddress:
    """``HH:MM`` and, for one of several entries that minute, its 1-based position."""

    hhmm: str
    nth: int | None = None

    def render(self) -> str:
        return self.hhmm if self.nth is None else f"{self.hhmm}#{self.nth}"


def parse_time(text: str) -> TimeAddress:
    """``"14:03"`` or ``"14:03#2"``; ``StoreError`` for anything else."""
    match = _TIME_ADDRESS_RE.match(text.strip())
    if match is None or (match["nth"] is not None and int(match["nth"]) < 1):
        raise StoreError(
            f"invalid time {text.strip()[:20]!r}: expected HH:MM or HH:MM#N",
            "use a 24-hour time, e.g. 09:05; 09:05#2 is the second entry written at 09:05",
        )
    return TimeAddress(match["time"], int(match["nth"]) if match["nth"] else None)


# -- lines and headings ------------------------------------------------------------


def lines_of(data: bytes) -> list[bytes]:
    """Lines as the chunker numbers them: split on ``\\n`` only, each keeping its
    terminator so offsets add up to the file's bytes."""
    parts = data.split(b"\n")
    out = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(
            f"{path} is not valid UTF-8", "re-save the file as UTF-8 before removing from it"
        ) from None


def _heading(line: bytes) -> tuple[int, str] | None:
    text = line.rstrip(b"\n").decode("utf-8", errors="replace")
    return heading_of(text.removesuffix("\r"))


def _is_entry_heading(found: tuple[int, str] | None) -> bool:
    return found is not None and found[0] == 3 and _ENTRY_TITLE_RE.match(found[1]) is not None


def _is_compact_heading(found: tuple[int, str] | None) -> bool:
    return found is not None and found[0] == 2 and _COMPACT_TITLE_RE.match(found[1]) is not None


def _compact_block_at(headings: list[tuple[int, str] | None], index: int) -> int | None:
    """The first line of the compact block holding line *index*, if any."""
    for i in range(index, -1, -1):
        found = headings[i]
        if _is_entry_heading(found):
            return None
        if found is not None and found[0] <= 2:
            return i if _is_compact_heading(found) else None
    return None


def _ends_block(found: tuple[int, str] | None, kind: Kind) -> bool:
    if found is None:
        return False
    if kind == "entry":
        return found[0] <= 3
    # A compact block's own sub-headings stay inside it, but an entry
    # appended after it (same session: no ``## Session`` heading between)
    # is not part of it.
    return found[0] <= 2 or _is_entry_heading(found)


def _span(lines: list[bytes], headings: list[tuple[int, str] | None], first: int) -> Span:
    """The span of the entry or compact block whose heading is line *first*."""
    found = headings[first]
    kind: Kind = "compact" if _is_compact_heading(found) else "entry"
    last = len(lines) - 1
    for i in range(first + 1, len(lines)):
        if _ends_block(headings[i], kind):
            last = i - 1
            break
    lead = first
    if last == len(lines) - 1:
        # The last thing in the file: the blank line that an append put in
        # front of it goes too (see store/forget.py).
        while lead > 0 and not lines[lead - 1].strip() and headings[lead - 1] is None:
            lead -= 1
        if lead == 0:
            lead = first  # never eat into a file that is nothing but blank lines
    start = sum(len(line) for line in lines[:lead])
    end = start + sum(len(line) for line in lines[lead : last + 1])
    return Span(first=first, last=last, start=start, end=end, kind=kind)


# -- every block of a file ------------------------------------------------------------


BlockKind = Literal["entry", "compact", "other"]


@dataclass(frozen=True)
class Block:
    """One part of a daily file, in file order, by the rules a removal uses.

    ``entry`` and ``compact`` blocks are exactly the spans memory_forget
    removes (a compact block with its ``###`` sub-sections); ``address`` is
    the time that removes it (``HH:MM#N``, as ``locate_time`` numbers them).
    ``other`` is hand-written text under a heading of its own (a ``## Notes``
    section, say), which no removal takes: it has no address.
    """

    first: int  # the block's first line, 0-based (its heading, for an entry)
    last: int
    kind: BlockKind
    time: str = ""  # HH:MM of an entry or compact heading
    address: str = ""


def blocks(data: bytes) -> list[Block]:
    """Every entry, compact block and hand-written section of *data*.

    ``other`` blocks with nothing but headings and blank lines (the day's
    ``# date`` and ``## Session`` headings) are left out.
    """
    lines = lines_of(data)
    headings = [_heading(line) for line in lines]
    out: list[Block] = []
    seen: dict[str, int] = {}
    covered_to = -1  # the last line an entry or compact block took
    other_from: int | None = None

    def flush_other(upto: int) -> None:
        if other_from is None:
            return
        body = [i for i in range(other_from, upto) if headings[i] is None and lines[i].strip()]
        if body:
            out.append(Block(other_from, upto - 1, "other"))

    for i, found in enumerate(headings):
        if i <= covered_to:
            continue
        if _is_compact_heading(found) or _is_entry_heading(found):
            flush_other(i)
            other_from = None
            assert found is not None
            hhmm = found[1].removeprefix("Memory Compact").strip()
            span = _span(lines, headings, i)
            seen[hhmm] = seen.get(hhmm, 0) + 1
            out.append(Block(i, span.last, span.kind, hhmm, f"{hhmm}#{seen[hhmm]}"))
            covered_to = span.last
        elif (found is not None and found[0] <= 3) or other_from is None:
            flush_other(i)
            other_from = i
    flush_other(len(lines))
    return out


# -- by line -------------------------------------------------------------------------


def locate_line(data: bytes, line_number: int, path: Path) -> Span:
    """The entry or compact block holding 1-based *line_number*."""
    lines = lines_of(data)
    if not 1 <= line_number <= len(lines):
        raise NotFoundError(
            f"line {line_number} is past the end of {path} ({len(lines)} lines)",
            "run `memlane search` again for current chunk hashes",
        )
    headings = [_heading(line) for line in lines]
    index = line_number - 1
    block = _compact_block_at(headings, index)
    if block is not None:
        return _span(lines, headings, block)
    for i in range(index, -1, -1):
        found = headings[i]
        if found is None or found[0] > 3:
            continue
        if _is_entry_heading(found):
            return _span(lines, headings, i)
        level, title = found
        raise StoreError(
            f"line {line_number} of {path} is not inside an entry: it belongs to the "
            f"heading {'#' * level} {title!r} (line {i + 1})",
            "memory_forget removes one whole `### HH:MM` entry or `## Memory Compact` "
            "block; edit other text by hand",
        )
    raise StoreError(
        f"line {line_number} of {path} is before the first entry",
        "memory_forget removes one whole `### HH:MM` entry or `## Memory Compact` block",
    )


# -- by time -------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One of the entries a time names, as a refusal describes it."""

    position: int  # 1-based among the entries at that time, in file order
    line: int  # the heading's line, 1-based
    preview: str
    chunk_hash: str | None

    def render(self, hhmm: str) -> str:
        hashed = f", chunk {self.chunk_hash}" if self.chunk_hash else ""
        return f"{hhmm}#{self.position} (line {self.line}{hashed}): {self.preview!r}"


def locate_time(
    data: bytes,
    address: TimeAddress,
    path: Path,
    *,
    source: str | None = None,
    model: str | None = None,
) -> Span:
    """The entry (or compact block) headed at ``address.hhmm``; with several,
    the ``address.nth``-th of them. *source* and *model*, when given, let a
    refusal show each candidate's chunk hash as the index has it."""
    lines = lines_of(data)
    headings = [_heading(line) for line in lines]
    matches: list[int] = []
    times: list[str] = []
    for i, found in enumerate(headings):
        if found is not None and _is_compact_heading(found):
            title_time = found[1].removeprefix("Memory Compact").strip()
        elif found is not None and _is_entry_heading(found):
            if _compact_block_at(headings, i) is not None:
                continue
            title_time = found[1]
        else:
            continue
        times.append(title_time)
        if title_time == address.hhmm:
            matches.append(i)
    hhmm = address.hhmm
    if not matches:
        listed = ", ".join(dict.fromkeys(times)) or "none"
        raise NotFoundError(
            f"no entry at {hhmm} in {path} (entries there: {listed})",
            "give the exact HH:MM of an entry heading, or a chunk hash from `memlane search`",
        )
    if address.nth is None and len(matches) == 1:
        return _span(lines, headings, matches[0])
    if address.nth is not None and address.nth <= len(matches):
        return _span(lines, headings, matches[address.nth - 1])
    spans = [_span(lines, headings, i) for i in matches]
    listed = "; ".join(c.render(hhmm) for c in _candidates(data, lines, spans, path, source, model))
    date = path.name.removesuffix(".md")
    command = f"`memlane forget --date {date} --time {hhmm}#N`"
    if address.nth is None:
        raise StoreError(
            f"{len(matches)} entries in {path} are at {hhmm}, so nothing was removed: {listed}",
            f"name the one to remove by its position, {command} (N from 1 to {len(matches)}; "
            f'memory_forget takes time "{hhmm}#N"), or by its chunk hash',
        )
    raise NotFoundError(
        f"there {'is' if len(matches) == 1 else 'are'} only {len(matches)} "
        f"{'entry' if len(matches) == 1 else 'entries'} at {hhmm} in {path}, so nothing "
        f"was removed: {listed}",
        f"use {command} with N from 1 to {len(matches)}",
    )


def _candidates(
    data: bytes,
    lines: list[bytes],
    spans: list[Span],
    path: Path,
    source: str | None,
    model: str | None,
) -> list[Candidate]:
    chunks = []
    if source is not None and model is not None:
        chunks = chunk_markdown(decode(data, path), source, model)
    out = []
    for position, span in enumerate(spans, start=1):
        # A chunk of this entry: the one that starts on its heading line.
        hashes = [c.chunk_hash for c in chunks if c.start_line == span.first + 1]
        out.append(
            Candidate(
                position=position,
                line=span.first + 1,
                preview=_preview(lines[span.first + 1 : span.last + 1]),
                chunk_hash=hashes[0] if hashes else None,
            )
        )
    return out


def _preview(body: list[bytes]) -> str:
    """The entry's first line of text: no anchor comment, no bullet, clipped."""
    for raw in body:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line or line.startswith("<!--"):
            continue
        line = line.removeprefix("- ").strip()
        if len(line) > PREVIEW_CHARS:
            line = line[: PREVIEW_CHARS - 1].rstrip() + "…"
        return line
    return "(empty)"
