"""The topic memory at a glance, as pi-memory's status shows it: on or off (and
which configuration layer said so), where it lives, how full MEMORY.md is, the
topic files and the last dream. ``memlane memory status`` prints it and every
status report carries it (``memory_status``, pi's ``/memory status``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.store.topics import IndexUsage


@dataclass(frozen=True)
class TopicOverview:
    enabled: bool
    enabled_from: str  # the configuration layer of topics.enabled
    store: str
    directory: str  # where the topic files live
    memory_index: str
    usage: IndexUsage
    files: list[str]
    entries: int
    last_dream: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "enabled_from": self.enabled_from,
            "store": self.store,
            "directory": self.directory,
            "memory_index": self.memory_index,
            "index_usage": self.usage.to_json(),
            "topic_files": list(self.files),
            "entries": self.entries,
            "last_dream": self.last_dream,
            "capacity_problem": self.usage.problem(),
        }

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) lines, as the status reports show them."""
        return topic_rows(self.to_json())


def topic_rows(topics: dict[str, Any] | None) -> list[tuple[str, str]]:
    """pi-memory's status lines: on/off, directory, MEMORY.md, topic files, last dream."""
    if not topics:
        return []
    usage = topics.get("index_usage") or {}
    files = list(topics.get("topic_files") or [])
    return [
        (
            "topic memory",
            f"{'on' if topics.get('enabled') else 'off'} "
            f"(topics.enabled, from {topics.get('enabled_from')})",
        ),
        ("topic directory", str(topics.get("directory"))),
        (
            "MEMORY.md",
            f"{usage.get('lines', 0)}/{usage.get('max_lines', 0)} lines, "
            f"{usage.get('bytes', 0)}/{usage.get('max_bytes', 0)} bytes",
        ),
        (
            "topic files",
            f"{len(files)} ({topics.get('entries', 0)} entries)"
            + (": " + ", ".join(files) if files else ""),
        ),
        ("last dream", str(topics.get("last_dream") or "never")),
    ]


def topic_overview(mem: ProjectMemory) -> TopicOverview:
    """The topic memory of *mem*'s project as it is on disk now."""
    from memlane.engine.topics.dream.meta import read_meta
    from memlane.store import topics as store_topics
    from memlane.store.layout import TOPICS_DIR

    settings = mem.config.topics
    store = mem.scope.store
    usage = store_topics.index_usage(
        store, settings.mem_index_max_lines, settings.mem_index_max_bytes
    )
    infos = store_topics.list_topics(store) if store.is_dir() else []
    return TopicOverview(
        enabled=settings.enabled,
        enabled_from=mem.config.values["topics.enabled"].layer,
        store=str(store),
        directory=str(store / TOPICS_DIR),
        memory_index=str(store_topics.memory_index_path(store)),
        usage=usage,
        files=[f"{info.slug}.md" for info in infos],
        entries=sum(len(info.titles) for info in infos),
        last_dream=read_meta(store).last_dream_at,
    )
