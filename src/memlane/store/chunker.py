"""Markdown → chunks, byte-compatible with memsearch 0.4.x.

Rules (memsearch's, exactly): a file is cut at every heading line matching
``^(#{1,6})\\s+(.+)$`` (any level); the lines before the first heading form a
level-0 section with heading "". A section's content is its lines joined by
``\\n`` and stripped. A section with fewer than MIN_MEANINGFUL_LEN characters
left after removing HTML comments and heading lines is dropped. A section of
at most ``max_chunk_size`` characters is one chunk; a longer one is split
into pieces, each starting with the previous piece's last ``overlap_lines``
lines. ``start_line`` is 1-based and ``end_line`` is the piece's last line
(for an unsplit section, the line before the next heading).

Ordinary markdown — where the output is guaranteed identical to memsearch
------------------------------------------------------------------------
A *section* is **ordinary** when either

(a) its stripped content is at most ``max_chunk_size`` characters, or
(b) memsearch's large-section splitter, run on its lines, yields pieces that
    (1) are each at most ``max_chunk_size`` characters, so it never falls back
        to cutting inside a line or a piece at a sentence or character
        boundary;
    (2) each pass the meaningful-content rule above; and
    (3) all differ in content.

Markdown is ordinary when every section it keeps is ordinary;
``is_ordinary(text)`` decides it. For every ordinary section, and whatever
the other sections of the file look like (sections are chunked
independently), ``chunk_markdown`` returns what memsearch's
``chunk_markdown`` returns: the same content, heading, heading_level,
start_line, end_line and content_hash, and the same chunk id from
``compute_chunk_id`` for the same source and model. Two handy sufficient
conditions: a section no longer than ``max_chunk_size`` is always ordinary,
and with the defaults a section whose lines are all at most 499 characters
always satisfies (1).

Elsewhere memsearch repeats text: a run-on line is cut into identical parts
(one character repeated), a long line stays in the two-line overlap and is
re-emitted with every following piece, and a heading followed by a long line
is emitted alone. Such sections go to ``splitting.safe_pieces`` instead,
which guarantees: no two chunks of a section with equal content, no chunk
without meaningful content, every character of the section's text in some
chunk, and 1 <= start_line <= end_line within the section's lines.

Text is chunked exactly as given: a CRLF file keeps its ``\\r`` characters
in the content and the content hash, which is what memsearch's indexer does
(it decodes the file's bytes without newline translation).
"""

from __future__ import annotations

from memlane.core.types import Chunk, chunk_id_of, content_hash_of
from memlane.store.markdown import has_meaningful_content, split_sections
from memlane.store.splitting import Piece, is_clean, mesh_pieces, safe_pieces

MAX_CHUNK_SIZE = 1500
OVERLAP_LINES = 2


def _check_limits(max_chunk_size: int, overlap_lines: int) -> None:
    if max_chunk_size < 1:
        raise ValueError(f"max_chunk_size must be at least 1, got {max_chunk_size}")
    if overlap_lines < 0:
        raise ValueError(f"overlap_lines must not be negative, got {overlap_lines}")


def _section_pieces(
    lines: list[str], max_chunk_size: int, overlap_lines: int
) -> tuple[list[Piece], bool]:
    """The pieces of one kept section and whether the section is ordinary."""
    content = "\n".join(lines).strip()
    if len(content) <= max_chunk_size:
        return [(content, 0, len(lines) - 1)], True
    mesh = mesh_pieces(lines, max_chunk_size, overlap_lines)
    if mesh is not None and is_clean(mesh):
        return mesh, True
    return safe_pieces(lines, max_chunk_size, overlap_lines), False


def _kept_sections(text: str) -> list[tuple[int, list[str], str, int]]:
    """``(first line index, lines, heading, level)`` of every section kept."""
    lines = text.split("\n")
    kept: list[tuple[int, list[str], str, int]] = []
    for span in split_sections(lines):
        section = lines[span.start : span.end]
        content = "\n".join(section).strip()
        if content and has_meaningful_content(content):
            kept.append((span.start, section, span.heading, span.level))
    return kept


def chunk_markdown(
    text: str,
    source: str,
    model: str,
    *,
    max_chunk_size: int = MAX_CHUNK_SIZE,
    overlap_lines: int = OVERLAP_LINES,
) -> list[Chunk]:
    """Chunks of *text* (a file's full text), in file order.

    *source* is the file's absolute path as the index records it and *model*
    the embedding model name; both enter the chunk hash.
    """
    _check_limits(max_chunk_size, overlap_lines)
    chunks: list[Chunk] = []
    for base, lines, heading, level in _kept_sections(text):
        pieces, _ = _section_pieces(lines, max_chunk_size, overlap_lines)
        for content, first, last in pieces:
            start_line, end_line = base + first + 1, base + last + 1
            content_hash = content_hash_of(content)
            chunks.append(
                Chunk(
                    content=content,
                    source=source,
                    heading=heading,
                    heading_level=level,
                    start_line=start_line,
                    end_line=end_line,
                    content_hash=content_hash,
                    chunk_hash=chunk_id_of(source, start_line, end_line, content_hash, model),
                )
            )
    return chunks


def is_ordinary(
    text: str,
    *,
    max_chunk_size: int = MAX_CHUNK_SIZE,
    overlap_lines: int = OVERLAP_LINES,
) -> bool:
    """True when every kept section of *text* is ordinary (module docstring)."""
    _check_limits(max_chunk_size, overlap_lines)
    return all(
        _section_pieces(lines, max_chunk_size, overlap_lines)[1]
        for _, lines, _, _ in _kept_sections(text)
    )
