"""Markdown primitives shared by the chunker and the section reader.

These rules are memsearch 0.4.x's, because chunk boundaries and hashes must
agree byte for byte with every other agent indexing the same store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A heading is one to six '#', whitespace, then at least one character.
# Note that '.' also matches '\r', so a CRLF heading keeps its '\r' in the
# match and callers strip the title, exactly as memsearch does.
HEADING_RE = re.compile(r"^(#{1,6})\s+(.+)$", re.MULTILINE)
HTML_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)

# A chunk needs at least this much body text once comments and heading lines
# are removed; a bare "## Session 10:00" is not worth an embedding.
MIN_MEANINGFUL_LEN = 2


def has_meaningful_content(text: str) -> bool:
    """True when *text* keeps at least MIN_MEANINGFUL_LEN characters of body.

    Comments go first (they may span lines), then every heading line;
    ``splitlines`` (not ``split("\\n")``) is deliberate: it is what memsearch
    uses here, so a CRLF heading line is recognised as a heading.
    """
    uncommented = HTML_COMMENT_RE.sub("", text)
    body = [line for line in uncommented.splitlines() if HEADING_RE.match(line) is None]
    return len("\n".join(body).strip()) >= MIN_MEANINGFUL_LEN


def heading_of(line: str) -> tuple[int, str] | None:
    """``(level, title)`` when *line* is a heading, else None."""
    match = HEADING_RE.match(line)
    if match is None:
        return None
    return len(match.group(1)), match.group(2).strip()


@dataclass(frozen=True)
class SectionSpan:
    """Lines ``[start, end)`` (0-based) from one heading to the next.

    The text before the first heading is a level-0 span with heading "".
    """

    start: int
    end: int
    heading: str
    level: int


def split_sections(lines: list[str]) -> list[SectionSpan]:
    """Cut *lines* at every heading of any level, memsearch's section rule."""
    marks: list[tuple[int, int, str]] = []
    for index, line in enumerate(lines):
        found = heading_of(line)
        if found is not None:
            marks.append((index, found[0], found[1]))

    spans: list[SectionSpan] = []
    first_heading = marks[0][0] if marks else len(lines)
    if first_heading > 0:
        spans.append(SectionSpan(0, first_heading, "", 0))
    for position, (index, level, title) in enumerate(marks):
        end = marks[position + 1][0] if position + 1 < len(marks) else len(lines)
        spans.append(SectionSpan(index, end, title, level))
    return spans
