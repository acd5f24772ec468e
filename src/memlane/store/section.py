"""Reading store files and widening a chunk to its whole section (L2 recall).

Line numbers must mean the same thing here as in the chunker, which counts
``\\n``-separated lines of the text as memsearch's indexer decoded it (bytes
→ UTF-8, no newline translation). ``read_markdown`` therefore returns
the text untranslated (damaged lines left empty, so numbering is kept), and
``split_lines`` splits on ``\\n`` only.
"""

from __future__ import annotations

from pathlib import Path

from memlane.core.errors import StoreError
from memlane.core.regular_file import read_regular_file
from memlane.store import safe_paths
from memlane.store.damage import CheckedText, check_bytes
from memlane.store.markdown import heading_of
from memlane.store.safe_paths import MARKDOWN_MAX_BYTES


def read_markdown(path: Path, store: Path | None = None) -> str:
    """The file's text, line endings untouched, damaged lines left empty.

    Every failure to read becomes a one-line StoreError naming the file and
    what to do about it. A line that is not UTF-8 or that opens a comment
    never closed (store/damage.py) reads as an empty line: unlike memsearch,
    which silently replaces bad bytes, nothing is indexed from a damaged
    line, and unlike a strict reader, one damaged line does not cost the
    file its intact entries (ADR 0002). ``read_markdown_checked`` also says
    which lines those were.

    Only a regular file up to ``MARKDOWN_MAX_BYTES`` is read, never blocking
    (a FIFO or a device is refused: core/regular_file.py). With *store*,
    *path* is a file of that store and is read by ``safe_paths``' rules too:
    a link, or a path through one, is refused.
    """
    return read_markdown_checked(path, store).text


def read_markdown_checked(path: Path, store: Path | None = None) -> CheckedText:
    """``read_markdown``'s text plus the damaged lines it left empty."""
    return check_bytes(read_bytes(path, store), path)


def read_bytes(path: Path, store: Path | None = None) -> bytes:
    """The file's bytes (``read_markdown``'s rules); every failure is a one-line StoreError."""
    try:
        if store is None:
            return read_regular_file(path, max_bytes=MARKDOWN_MAX_BYTES, what="memory file")
        return safe_paths.read_bytes(store, path, max_bytes=MARKDOWN_MAX_BYTES)
    except FileNotFoundError:
        raise StoreError(
            f"memory file not found: {path}",
            "it was moved or deleted; run `memlane reindex` to refresh the index",
        ) from None
    except IsADirectoryError:
        raise StoreError(
            f"expected a markdown file but found a directory: {path}",
            "pass the path of a .md file",
        ) from None
    except PermissionError:
        raise StoreError(
            f"permission denied reading {path}",
            "give your user read access to it (e.g. chmod u+r)",
        ) from None
    except OSError as error:
        raise StoreError(
            f"cannot read {path}: {error.strerror or error}",
            "check the file and the disk it lives on",
        ) from None


def split_lines(text: str) -> list[str]:
    """Lines of *text* as numbered by the chunker, without line terminators.

    For text whose only line breaks are ``\\n`` and ``\\r\\n`` this equals
    ``text.splitlines()``, which memsearch's expand uses; other characters
    that ``splitlines`` treats as breaks (lone ``\\r``, ``\\x0b``,
    ``\\u2028``...) stay inside their line, so numbers agree with the chunk.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def extract_section(lines: list[str], start_line: int, heading_level: int) -> tuple[str, int, int]:
    """The whole section holding a chunk: ``(content, start_line, end_line)``.

    *start_line* is the chunk's 1-based first line and *heading_level* its
    section's level. Walk back from the chunk's first line to the nearest
    heading of level <= *heading_level*, forward to the next heading of level
    <= *heading_level* (or the end), memsearch's expand rule; the returned
    lines are 1-based and inclusive.

    A level-0 chunk (text before the first heading) is the one departure:
    memsearch returns everything from the chunk to the end of the file; here
    the preamble ends at the first heading, as it does for the chunker.
    """
    count = len(lines)
    section_start = start_line - 1
    if heading_level > 0:
        # Clamped: the file may have shrunk since it was indexed.
        for index in range(min(start_line, count) - 1, -1, -1):
            found = heading_of(lines[index])
            if found is not None and found[0] <= heading_level:
                section_start = index
                break
    else:
        section_start = 0

    section_end = count
    for index in range(max(start_line, 0), count):
        found = heading_of(lines[index])
        if found is not None and (heading_level == 0 or found[0] <= heading_level):
            section_end = index
            break
    return "\n".join(lines[section_start:section_end]), section_start + 1, section_end
