"""What an import did: one item per source entry, and the report the CLI shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlane.store.layout import TOPICS_DIR

PI_MEMORY = "pi-memory"
CLAUDE_CODE = "claude-code"
SOURCE_LABELS = {PI_MEMORY: "pi-memory", CLAUDE_CODE: "Claude Code"}


@dataclass(frozen=True)
class ImportItem:
    """One entry of the source and what became of it."""

    action: str  # "imported" | "skipped" | "renamed" | "salvaged"
    topic: str  # target slug
    title: str  # the title it has (or, skipped, already had) in the topic
    source: str  # the source file, relative to the imported directory
    original_title: str | None = None  # renamed: the title in the source
    reason: str | None = None  # salvaged: why it could not be read as an entry

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "topic": self.topic,
            "file": f"{TOPICS_DIR}/{self.topic}.md",
            "title": self.title,
            "source": self.source,
            "original_title": self.original_title,
            "reason": self.reason,
        }


@dataclass
class ImportReport:
    source: str
    directory: str
    dry_run: bool
    derivation: str | None = None  # how the default directory was found
    items: list[ImportItem] = field(default_factory=list)
    topics_created: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # files not imported, with why
    notices: list[str] = field(default_factory=list)
    redactions: int = 0
    capacity_problem: str | None = None

    def of(self, action: str) -> list[ImportItem]:
        return [item for item in self.items if item.action == action]

    @property
    def written(self) -> int:
        return sum(1 for item in self.items if item.action != "skipped")

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "directory": self.directory,
            "dry_run": self.dry_run,
            "derivation": self.derivation,
            "counts": {
                action: len(self.of(action))
                for action in ("imported", "skipped", "renamed", "salvaged")
            },
            "items": [item.to_json() for item in self.items],
            "topics_created": list(self.topics_created),
            "ignored": list(self.ignored),
            "redactions": self.redactions,
            "capacity_problem": self.capacity_problem,
            "notices": list(self.notices),
        }

    def render(self) -> str:
        label = SOURCE_LABELS.get(self.source, self.source)
        verb = "Would import" if self.dry_run else "Imported"
        lines = [f"{verb} {label} memory from {self.directory}"]
        if self.derivation:
            lines.append(f"  ({self.derivation})")
        if self.dry_run:
            lines.append("Dry run: nothing was written.")
        counts = {a: len(self.of(a)) for a in ("imported", "renamed", "salvaged", "skipped")}
        lines.append(
            f"{counts['imported']} imported, {counts['renamed']} renamed, "
            f"{counts['salvaged']} salvaged, {counts['skipped']} skipped (already present); "
            f"{len(self.topics_created)} new topic(s)"
        )
        for item in self.items:
            where = f"{TOPICS_DIR}/{item.topic}.md"
            if item.action == "imported":
                lines.append(f"  + {where}: {item.title}  [{item.source}]")
            elif item.action == "renamed":
                lines.append(
                    f'  ~ {where}: "{item.original_title}" → "{item.title}" (another entry '
                    f"has that title)  [{item.source}]"
                )
            elif item.action == "salvaged":
                lines.append(f"  ! {where}: {item.title} — {item.reason}  [{item.source}]")
            else:
                lines.append(f"  = {where}: {item.title} (already present)  [{item.source}]")
        for ignored in self.ignored:
            lines.append(f"  not imported: {ignored}")
        if self.redactions:
            lines.append(f"{self.redactions} secret(s) were redacted on the way in.")
        if self.capacity_problem:
            lines.append(f"WARNING: {self.capacity_problem}")
        for notice in self.notices:
            lines.append(f"note: {notice}")
        return "\n".join(lines)
