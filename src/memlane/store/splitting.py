"""How one oversized section becomes pieces.

Two splitters live here:

* ``mesh_pieces`` reproduces memsearch 0.4.x's large-section splitter on the
  inputs where that splitter behaves (see ``memlane.store.chunker`` for the
  exact "ordinary" condition). It gives up (returns None) as soon as it would
  have to cut inside a line, because that is where memsearch starts to
  repeat text.
* ``safe_pieces`` is used for every other section. It never emits two pieces
  with the same content, never emits a piece without meaningful content, and
  every character of the section lands in some piece.

A piece is ``(content, first_line, last_line)`` with 0-based line indexes
relative to the section; the chunker turns them into absolute 1-based lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlane.store.markdown import has_meaningful_content

Piece = tuple[str, int, int]

# Where a run-on line may be cut: after an ellipsis, after CJK full-width
# stop/exclamation/question/semicolon, or after ASCII .!?; when what follows
# is whitespace, the end, or a CJK character. Requiring that lookahead keeps
# e-mail addresses, file names, URLs and version numbers in one piece.
_SENTENCE_END_RE = re.compile(
    "|".join(
        (
            "……",
            "…",
            "[。！？；]\\s*",
            "[.!?;](?=\\s|$|[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af])\\s*",
        )
    )
)


def split_long_text(text: str, max_size: int) -> list[str]:
    """Cut *text* into parts of at most *max_size* characters.

    Each cut goes after the last sentence end inside the window, else hard at
    *max_size*. The parts concatenate back to *text* exactly.
    """
    parts: list[str] = []
    rest = text
    while len(rest) > max_size:
        # Searching with endpos makes '$' match at the window edge, so a stop
        # that is the window's last character counts as a sentence end.
        ends = [match.end() for match in _SENTENCE_END_RE.finditer(rest, 0, max_size)]
        cut = ends[-1] if ends else max_size
        parts.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        parts.append(rest)
    return parts


def mesh_pieces(lines: list[str], max_size: int, overlap: int) -> list[Piece] | None:
    """memsearch's line-accumulating splitter, or None if it would cut a line.

    Lines accumulate until their joined text reaches *max_size*. Reaching it
    on a blank line (not the section's last) closes the piece there; reaching
    it on any other line closes the piece before that line. Each new piece
    starts with the previous piece's last *overlap* lines. A lone line that
    reaches the size on its own becomes its own piece with no carry-over.
    """
    pieces: list[Piece] = []
    held: list[str] = []  # lines of the piece being built; ends at line i
    count = len(lines)

    def close(raw: str, first: int, last: int) -> bool:
        content = raw.strip()
        if len(content) > max_size:
            return False  # memsearch would cut inside the text here
        if content:
            pieces.append((content, first, last))
        return True

    for i, line in enumerate(lines):
        held.append(line)
        first = i + 1 - len(held)
        joined = "\n".join(held)
        if len(joined) < max_size:
            if i == count - 1:
                if not close(joined, first, i):
                    return None
                held = []
            continue
        if line.strip() == "" and i + 1 < count:
            # Paragraph break: the blank line ends this piece.
            if not close(joined, first, i):
                return None
            held = _tail(held, overlap)
        elif len(held) > 1:
            # No break at hand: the piece ends on the previous line and the
            # current line moves to the next piece, after the carried lines.
            held.pop()
            if not close("\n".join(held), first, i - 1):
                return None
            held = [*_tail(held, overlap), line]
        else:
            # One line reaching the limit alone; longer would need a cut.
            if len(joined) > max_size or not close(joined, i, i):
                return None
            held = []
    # Lines are left over only when the last line was moved to a new piece.
    if held and not close("\n".join(held), count - len(held), count - 1):
        return None
    return pieces


def _tail(held: list[str], overlap: int) -> list[str]:
    """The last *overlap* lines (all of them if there are fewer)."""
    return held[max(0, len(held) - overlap) :] if overlap > 0 else []


def is_clean(pieces: list[Piece]) -> bool:
    """Every piece meaningful and no two pieces with the same content."""
    contents = [content for content, _, _ in pieces]
    return len(set(contents)) == len(contents) and all(
        has_meaningful_content(content) for content in contents
    )


@dataclass(frozen=True)
class _Unit:
    """A whole line, or one part of a line too long to fit in any piece."""

    text: str
    line: int
    opens_line: bool  # joined to its predecessor with "\n" rather than ""
    whole: bool


def _units_of(lines: list[str], max_size: int) -> list[_Unit]:
    units: list[_Unit] = []
    for index, line in enumerate(lines):
        if len(line) <= max_size:
            units.append(_Unit(line, index, True, True))
            continue
        for number, part in enumerate(split_long_text(line, max_size)):
            units.append(_Unit(part, index, number == 0, False))
    return units


def _render(units: list[_Unit], first: int, last: int) -> str:
    out = [units[first].text]
    for unit in units[first + 1 : last + 1]:
        out.append("\n" + unit.text if unit.opens_line else unit.text)
    return "".join(out)


def _cost(unit: _Unit) -> int:
    return len(unit.text) + (1 if unit.opens_line else 0)


@dataclass
class _Span:
    first: int  # first unit, carried-over lines included
    fresh: int  # first unit not carried over from the previous piece
    last: int


def _pack(units: list[_Unit], max_size: int, overlap: int) -> list[_Span]:
    """Greedy packing at unit boundaries, carrying whole lines as overlap."""
    spans: list[_Span] = []
    current = _Span(0, 0, 0)
    size = len(units[0].text)
    for index in range(1, len(units)):
        unit = units[index]
        if size + _cost(unit) <= max_size:
            size += _cost(unit)
            current.last = index
            continue
        spans.append(current)
        # Carry the closed piece's trailing whole lines, but only as many as
        # still fit next to the unit that overflowed; a carried cut line
        # would just repeat a fragment.
        carry = index
        while (
            carry > current.first
            and index - carry < overlap
            and units[carry - 1].whole
            and len(_render(units, carry - 1, index)) <= max_size
        ):
            carry -= 1
        current = _Span(carry, index, index)
        size = len(_render(units, carry, index))
    spans.append(current)
    return spans


def _needs_merge(units: list[_Unit], span: _Span) -> bool:
    fresh_blank = all(not unit.text.strip() for unit in units[span.fresh : span.last + 1])
    return fresh_blank or not has_meaningful_content(_render(units, span.first, span.last))


def safe_pieces(lines: list[str], max_size: int, overlap: int) -> list[Piece]:
    """Pieces for a section memsearch would split badly.

    Packing keeps pieces within *max_size* and cuts a line only when the line
    alone is too long. A piece that would carry no meaningful text (a heading
    and comments before a run-on line) is merged into its neighbour, and a
    piece whose new lines are all blank is folded into the one before; this
    may exceed *max_size* by that small amount, which is better than an
    empty embedding. Pieces whose content repeats an earlier piece (a run-on
    line of one repeated character) are dropped: the text is already there.
    """
    units = _units_of(lines, max_size)
    if not units:
        return []
    spans = _pack(units, max_size, overlap)

    # One forward pass; after a merge step back one span, since only the
    # merged span changed and it may now be fine or still need its neighbour.
    at = 0
    while at < len(spans) and len(spans) > 1:
        span = spans[at]
        if not _needs_merge(units, span):
            at += 1
            continue
        new_text = any(unit.text.strip() for unit in units[span.fresh : span.last + 1])
        if new_text and at + 1 < len(spans):
            # Headings and comments belong with the text that follows them.
            following = spans.pop(at + 1)
            span.last = max(span.last, following.last)
        else:
            # Only carried or blank lines (or the last piece): fold it into
            # a neighbour, the previous one when there is one.
            neighbour = spans[at - 1] if at > 0 else spans[at + 1]
            del spans[at]
            neighbour.first = min(neighbour.first, span.first)
            neighbour.fresh = min(neighbour.fresh, span.fresh)
            neighbour.last = max(neighbour.last, span.last)
        at = max(0, at - 1)

    pieces: list[Piece] = []
    seen: set[str] = set()
    for span in spans:
        content = _render(units, span.first, span.last).strip()
        if content in seen or not has_meaningful_content(content):
            continue
        seen.add(content)
        pieces.append((content, units[span.first].line, units[span.last].line))
    return pieces
