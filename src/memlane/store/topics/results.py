"""What the topic operations report: a topic's summary, MEMORY.md's fill, a change."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.store.layout import TOPICS_DIR
from memlane.store.topics.codec import TopicFile
from memlane.store.topics.names import DEFAULT_TYPE, display_name


@dataclass(frozen=True)
class TopicInfo:
    name: str
    slug: str
    path: str
    type: str
    description: str
    updated: str
    titles: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "slug": self.slug,
            "file": f"{TOPICS_DIR}/{self.slug}.md",
            "path": self.path,
            "type": self.type,
            "description": self.description,
            "updated": self.updated,
            "entries": list(self.titles),
        }


@dataclass(frozen=True)
class IndexUsage:
    """How full MEMORY.md is against its limits."""

    lines: int
    bytes: int
    max_lines: int
    max_bytes: int

    @property
    def over(self) -> list[str]:
        out = []
        if self.lines > self.max_lines:
            out.append(f"{self.lines} lines (limit {self.max_lines})")
        if self.bytes > self.max_bytes:
            out.append(f"{self.bytes} bytes (limit {self.max_bytes})")
        return out

    def problem(self) -> str | None:
        """A plain-words capacity warning, or None when within the limits."""
        if not self.over:
            return None
        return (
            # Said after a list and a remove too, so it does not claim a save.
            f"MEMORY.md is over capacity: {' and '.join(self.over)}. New sessions "
            "only see the index up to the limit (the rest is cut with "
            "[truncated]). Fix: run `memlane dream` to merge topics, or remove topics you "
            "no longer need (`memlane topic remove`); the limits are "
            "topics.mem_index_max_lines and topics.mem_index_max_bytes."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "bytes": self.bytes,
            "max_lines": self.max_lines,
            "max_bytes": self.max_bytes,
            "over": self.over,
        }


@dataclass(frozen=True)
class TopicChange:
    """What an add or a remove did."""

    action: str  # "added" | "removed"
    name: str
    slug: str
    path: str
    title: str
    type: str
    entry: str  # the entry block as written or removed
    created_file: bool = False
    deleted_file: bool = False
    index_line: str | None = None  # the topic's MEMORY.md line now (None: removed)
    usage: IndexUsage | None = None
    redactions: int = 0

    @property
    def capacity_problem(self) -> str | None:
        return self.usage.problem() if self.usage is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "name": self.name,
            "slug": self.slug,
            "file": f"{TOPICS_DIR}/{self.slug}.md",
            "path": self.path,
            "title": self.title,
            "type": self.type,
            "entry": self.entry,
            "created_file": self.created_file,
            "deleted_file": self.deleted_file,
            "index_line": self.index_line,
            "index_usage": self.usage.to_json() if self.usage else None,
            "capacity_problem": self.capacity_problem,
            "redactions": self.redactions,
        }


def topic_info(slug: str, path: Path, parsed: TopicFile) -> TopicInfo:
    return TopicInfo(
        name=parsed.get("name") or display_name(slug, slug),
        slug=slug,
        path=str(path),
        type=parsed.get("type") or DEFAULT_TYPE,
        description=parsed.get("description") or "",
        updated=parsed.get("updated") or "",
        titles=parsed.titles,
    )
