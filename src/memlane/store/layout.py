"""Where things live in a store and what a path or heading says about them.

Store layout: daily files ``YYYY-MM-DD.md`` (journal), curated
``MEMORY.md`` and ``topics/*.md`` (topic), anything else markdown (journal).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Literal

from memlane.store import safe_paths

MARKDOWN_SUFFIXES = (".md", ".markdown")
TOPICS_DIR = "topics"
MEMORY_INDEX = "MEMORY.md"

_DAILY_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_ENTRY_HEADING_RE = re.compile(r"^(?:###[ \t]+)?([01]\d|2[0-3]):([0-5]\d)\s*$")


@dataclass(frozen=True)
class MarkdownScan:
    """What a walk of the store found: the files to index, and the links it refused."""

    files: list[Path] = field(default_factory=list)
    # Symbolic links met in the store (markdown-named files and directories):
    # never followed, never indexed, each reported so the user can remove it.
    links: list[Path] = field(default_factory=list)


def scan_markdown_files(store_dir: Path) -> MarkdownScan:
    """Every markdown file of the store, sorted, as absolute paths, and the links met.

    The walk matches memsearch's scanner where it can, so both index the
    same files under the same source strings: suffixes compare
    case-insensitively, hidden files and directories are skipped and
    symlinked directories are not followed. memlane departs from it on
    links: memsearch lists a symlinked file by its link path, memlane never
    reads one (a repository can commit ``2026-12-01.md -> ~/.bashrc``), so
    every link, whatever it points at, is left out and reported in
    ``links`` instead. A store whose own path goes through a link it was
    not configured with is refused (``safe_paths.check_store_root``). The
    store's own ``MEMORY.md`` is left out, since it only repeats the topic
    files' titles and would crowd their search hits; anything that is not a
    regular file (a FIFO, a device) is left out too.
    """
    root = safe_paths.check_store_root(store_dir)
    scan = MarkdownScan()
    if not root.is_dir():
        return scan
    for dirpath, dirnames, filenames in os.walk(root):
        kept = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            if os.path.islink(os.path.join(dirpath, name)):
                scan.links.append(Path(dirpath) / name)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith(".") or not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            candidate = Path(dirpath) / name
            try:
                info = candidate.lstat()
            except OSError:
                continue  # removed since the directory was listed
            if stat.S_ISLNK(info.st_mode):
                scan.links.append(candidate)
            elif stat.S_ISREG(info.st_mode) and not (name == MEMORY_INDEX and dirpath == str(root)):
                scan.files.append(candidate)
    scan.files.sort()
    scan.links.sort()
    return scan


def list_markdown_files(store_dir: Path) -> list[Path]:
    """The files ``scan_markdown_files`` would index, without the links it met."""
    return scan_markdown_files(store_dir).files


def kind_of(path: Path, store_dir: Path) -> Literal["journal", "topic"]:
    """ "topic" for ``MEMORY.md`` and anything under ``topics/``, else "journal".

    A path outside the store is a journal: classification never fails.
    """
    root = store_dir.expanduser().resolve()
    candidate = path.expanduser().absolute()
    for base in (root, store_dir.expanduser().absolute()):
        try:
            relative = candidate.relative_to(base)
        except ValueError:
            continue
        parts = relative.parts
        if parts == (MEMORY_INDEX,) or (len(parts) > 1 and parts[0] == TOPICS_DIR):
            return "topic"
        return "journal"
    return "journal"


def date_of(path: Path) -> str | None:
    """``YYYY-MM-DD`` from a daily file name, None for any other name or a bad date."""
    match = _DAILY_NAME_RE.match(path.name)
    if match is None:
        return None
    try:
        date.fromisoformat(match.group(1))
    except ValueError:
        return None
    return match.group(1)


def entry_time_of(heading: str) -> str | None:
    """``HH:MM`` from an entry heading.

    Accepts the heading line (``### 14:05``) or a chunk's heading title
    (``14:05``), since chunks store the title without the hashes. Anything
    else, including ``## Session 14:05``, is not an entry heading.
    """
    match = _ENTRY_HEADING_RE.match(heading.strip())
    if match is None:
        return None
    return f"{match.group(1)}:{match.group(2)}"


def walk_name(store: Path, source: str) -> str | None:
    """*source* under the name the walk of *store* lists it by, or None when
    the walk skips it (``list_markdown_files``' rules for a plain file): the
    files memlane keeps in step with an index, present or removed."""
    root = store.expanduser().resolve()
    candidate = Path(source).expanduser().absolute()
    for base in (root, store.expanduser().absolute()):
        try:
            relative = candidate.relative_to(base)
        except ValueError:
            continue
        if not relative.parts or relative.parts == (MEMORY_INDEX,):
            return None
        if any(part.startswith(".") for part in relative.parts):
            return None
        if not relative.name.lower().endswith(MARKDOWN_SUFFIXES):
            return None
        listed = root / relative
        try:
            # A link, or a path through one, is never indexed (the walk's rule).
            safe_paths.check_store_path(store, listed)
        except safe_paths.UnsafePathError:
            return None
        return str(listed)  # a removed file too: its chunks leave the index
    return None
