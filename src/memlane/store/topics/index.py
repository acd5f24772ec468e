"""``<store>/MEMORY.md``: one line per topic, ``- [Name](topics/<slug>.md) — hook``,
the hook summarising its entries; its limits and the snapshot's copy."""

from __future__ import annotations

from pathlib import Path

from memlane.core.settings import MEM_INDEX_MAX_BYTES, MEM_INDEX_MAX_LINES
from memlane.store import safe_paths
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR
from memlane.store.topics.files import read_text_strict, write_atomic
from memlane.store.topics.results import IndexUsage

TRUNCATED_MARKER = "[truncated]"
# One MEMORY.md line at most this many characters, hook included.
INDEX_LINE_MAX_CHARS = 150


def memory_index_path(store: Path) -> Path:
    """``<store>/MEMORY.md``; refused when it, or the store, is a link (safe_paths)."""
    return safe_paths.check_store_path(store, store / MEMORY_INDEX)


def index_line(name: str, slug: str, titles: list[str]) -> str:
    """``- [Name](topics/slug.md) — hook``, at most ``INDEX_LINE_MAX_CHARS``."""
    shown = " ".join(name.split()).replace("[", "(").replace("]", ")")
    if len(shown) > 60:
        shown = shown[:59].rstrip() + "…"
    head = f"- [{shown}]({TOPICS_DIR}/{slug}.md) — "
    hook = "; ".join(" ".join(t.split()) for t in titles)
    room = max(INDEX_LINE_MAX_CHARS - len(head), 20)
    if len(hook) > room:
        hook = hook[: room - 1].rstrip(" ;") + "…"
    return head + hook


def _line_target(slug: str) -> str:
    return f"]({TOPICS_DIR}/{slug}.md)"


def update_index_line(store: Path, slug: str, line: str | None) -> None:
    """Replace (or append, or with None drop) this topic's line; others stay verbatim."""
    path = memory_index_path(store)
    lines = read_text_strict(path).splitlines()
    target = _line_target(slug)
    kept: list[str] = []
    placed = False
    for existing in lines:
        if target in existing:
            if line is not None and not placed:
                kept.append(line)
                placed = True
            continue
        kept.append(existing)
    if line is not None and not placed:
        kept.append(line)
    write_atomic(path, "\n".join(kept) + "\n" if kept else "")


def index_usage(
    store: Path, max_lines: int = MEM_INDEX_MAX_LINES, max_bytes: int = MEM_INDEX_MAX_BYTES
) -> IndexUsage:
    text = read_text_strict(memory_index_path(store))
    return IndexUsage(len(text.splitlines()), len(text.encode("utf-8")), max_lines, max_bytes)


def index_for_snapshot(
    store: Path, max_lines: int = MEM_INDEX_MAX_LINES, max_bytes: int = MEM_INDEX_MAX_BYTES
) -> str:
    """MEMORY.md as the session snapshot carries it.

    At most ``max_lines`` lines and ``max_bytes`` bytes of the index (cut at
    a line boundary, or inside an over-long first line at a character
    boundary), then a ``[truncated]`` line when anything was left out. An
    empty or missing index gives "".
    """
    text = read_text_strict(memory_index_path(store))
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    cut = len(lines) > max_lines
    for line in lines[:max_lines]:
        cost = len(line.encode("utf-8")) + 1
        if size + cost > max_bytes:
            cut = True
            if not kept:
                clipped = line.encode("utf-8")[: max(max_bytes - 1, 0)]
                kept.append(clipped.decode("utf-8", "ignore"))
            break
        kept.append(line)
        size += cost
    out = "\n".join(kept)
    if cut:
        out = f"{out}\n{TRUNCATED_MARKER}" if out else TRUNCATED_MARKER
    return out
