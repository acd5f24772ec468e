"""Where things live in a store and what a path or heading says about them.

Store layout (DESIGN §2): daily files ``YYYY-MM-DD.md`` (journal), curated
``MEMORY.md`` and ``topics/*.md`` (topic), anything else markdown (journal).
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path
from typing import Literal

MARKDOWN_SUFFIXES = (".md", ".markdown")
TOPICS_DIR = "topics"
MEMORY_INDEX = "MEMORY.md"

_DAILY_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_ENTRY_HEADING_RE = re.compile(r"^(?:###[ \t]+)?([01]\d|2[0-3]):([0-5]\d)\s*$")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def list_markdown_files(store_dir: Path) -> list[Path]:
    """Every markdown file of the store, sorted, as absolute paths.

    The walk matches memsearch's scanner so both index the same files under
    the same source strings: the store directory is resolved, files below it
    keep their names under it (a symlinked file is listed by its link path,
    as memsearch lists it), suffixes compare case-insensitively, hidden files
    and directories are skipped and symlinked directories are not followed.
    Three memlane-specific rules: a symlink whose target lies outside the store
    (or is broken) is skipped, so nothing outside the store is ever indexed;
    a file reachable twice is listed once, under its real path when that
    is itself listed; and the store's own ``MEMORY.md`` is left out, since it
    only repeats the topic files' titles and would crowd their search hits.
    """
    root = store_dir.expanduser().resolve()
    if not root.is_dir():
        return []
    by_target: dict[Path, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            if name == MEMORY_INDEX and dirpath == str(root):
                continue
            candidate = Path(dirpath) / name
            try:
                target = candidate.resolve(strict=True)
            except (OSError, RuntimeError):
                continue  # broken or looping symlink
            if not target.is_file() or not _inside(target, root):
                continue
            by_target.setdefault(target, []).append(candidate)
    chosen = [target if target in seen else min(seen) for target, seen in by_target.items()]
    return sorted(chosen)


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
