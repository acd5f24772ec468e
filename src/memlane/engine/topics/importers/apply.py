"""Planning and applying an import, shared by both sources: an entry already
present is skipped, the same title with other content is added under a
suffixed title, and a topic the import creates keeps the source's frontmatter."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError, NotFoundError
from memlane.engine.topics.importers.report import ImportItem, ImportReport
from memlane.engine.topics.importers.scan import (
    SourceEntry,
    SourceTopic,
    salvage_entry,
    salvage_topic,
    scan_source,
)
from memlane.store import topics as store_topics
from memlane.store.redaction import redact

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

IMPORT_SUFFIX = "imported"


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _content_hash(content: str) -> str:
    return hashlib.sha256(_normal(content).encode("utf-8")).hexdigest()


def _cleaned(title: str, content: str) -> tuple[str, str, int]:
    """Title and content as ``store.topics.add`` would write them (raises
    ``MemlaneError`` for what it would refuse)."""
    # The store's own normalisation, so "already present" compares what was
    # written with what would be written, redaction included.
    red_title, red_content = redact(title), redact(content)
    clean_title = store_topics.normalize_title(red_title.text)
    clean_content = store_topics.normalize_content(red_content.text)
    return clean_title, clean_content, red_title.count + red_content.count


def _suffixed_re(base: str) -> re.Pattern[str]:
    return re.compile(re.escape(base) + rf" \({IMPORT_SUFFIX} \d{{4}}-\d{{2}}-\d{{2}}(?: #\d+)?\)$")


def _suffix_base(title: str, suffix_len: int) -> str:
    room = store_topics.TITLE_MAX_CHARS - suffix_len
    return title if len(title) <= room else title[: room - 1].rstrip() + "…"


@dataclass
class _Action:
    entry: SourceEntry
    action: str
    title: str
    content: str
    redactions: int = 0


class _Planner:
    """Decides each entry against the store as it is plus what this run adds."""

    def __init__(self, store: Path, today: date) -> None:
        self.store = store
        self.day = today
        self.today = today.isoformat()
        self.state: dict[str, dict[str, str]] = {}
        self.existing: set[str] = set()

    def titles(self, slug: str) -> dict[str, str]:
        if slug not in self.state:
            try:
                parsed = store_topics.read_topic(self.store, slug)
            except NotFoundError:
                self.state[slug] = {}
            else:
                self.existing.add(slug)
                self.state[slug] = {e.title: _content_hash(e.body) for e in parsed.entries}
        return self.state[slug]

    def decide(self, entry: SourceEntry) -> _Action:
        title, content, redactions = _cleaned(entry.title, entry.content)
        digest = _content_hash(content)
        titles = self.titles(entry.topic)
        suffix = f" ({IMPORT_SUFFIX} {self.today})"
        base = _suffix_base(title, len(suffix) + 4)
        pattern = _suffixed_re(base)
        for existing, existing_hash in titles.items():
            if existing_hash == digest and (existing == title or pattern.match(existing)):
                return _Action(entry, "skipped", existing, content)
        action = "salvaged" if entry.reason else "imported"
        final = title
        if title in titles:
            action = "salvaged" if entry.reason else "renamed"
            final = base + suffix
            n = 2
            while final in titles:
                final = f"{base} ({IMPORT_SUFFIX} {self.today} #{n})"
                n += 1
        titles[final] = digest
        return _Action(entry, action, final, content, redactions)


def _apply_front(store: Path, slug: str, fields: Mapping[str, str], extra: list[str]) -> None:
    """Give a topic this import created the source's name, description, date
    and other frontmatter lines (``add`` derives its own)."""
    # store.topics has no public frontmatter edit; its lock, reader and atomic
    # writer keep this rewrite as safe as an add.
    with store_topics.locked(store):
        path = store_topics.topic_path(store, slug)
        parsed = store_topics.TopicFile.parse(store_topics.read_text_strict(path))
        for key in ("name", "description", "updated"):
            value = " ".join(redact(fields.get(key) or "").text.split())
            if value:
                parsed.set(key, value)
        if extra:
            if parsed.front and not parsed.front[-1].endswith("\n"):
                parsed.front[-1] += "\n"
            parsed.front.extend(redact(line).text.rstrip("\r\n") + "\n" for line in extra)
        store_topics.write_atomic(path, parsed.render())
        info = store_topics.topic_info(slug, path, parsed)
        store_topics.update_index_line(
            store, slug, store_topics.index_line(info.name, slug, info.titles)
        )


def run_import(
    mem: ProjectMemory,
    source: str,
    directory: Path,
    *,
    dry_run: bool,
    derivation: str | None,
) -> ImportReport:
    report = ImportReport(source, str(directory), dry_run, derivation)
    if not dry_run and not mem.config.topics.enabled:
        raise MemlaneError(
            "the topic memory is switched off (topics.enabled = false)",
            "turn it on with `memlane memory on`, or look first with --dry-run",
        )
    topics, report.ignored = scan_source(source, directory)
    store = mem.scope.store
    planner = _Planner(store, mem.clock.today())
    plans: list[tuple[SourceTopic, list[_Action]]] = []
    for topic in topics:
        actions: list[_Action] = []
        for entry in topic.entries:
            try:
                action = planner.decide(entry)
            except MemlaneError as exc:
                # The store would refuse it (an over-long title, say): keep it verbatim.
                whole = f"## {entry.title}\n{entry.content}"
                salvage = salvage_entry(source, entry.source, whole, exc.message)
                salvage.title = f"{entry.source} {entry.title}"[: store_topics.TITLE_MAX_CHARS]
                action = planner.decide(salvage)
                plans.append((salvage_topic(source), [action]))
                continue
            actions.append(action)
        if actions:
            plans.append((topic, actions))
    settings = mem.config.topics
    created: list[str] = []
    for topic, actions in plans:
        slug = topic.slug
        new_topic = slug not in planner.existing and slug not in created
        written = False
        for action in actions:
            entry = action.entry
            report.items.append(
                ImportItem(
                    action.action,
                    slug,
                    action.title,
                    entry.source,
                    original_title=entry.title if action.action == "renamed" else None,
                    reason=entry.reason,
                )
            )
            if action.action == "skipped" or dry_run:
                continue
            change = store_topics.add(
                store,
                content=action.content,
                topic=slug,
                title=action.title,
                type=topic.fields.get("type") if new_topic else None,
                today=planner.day,
                max_lines=settings.mem_index_max_lines,
                max_bytes=settings.mem_index_max_bytes,
            )
            written = True
            # The content handed to add is already redacted: count it here.
            report.redactions += action.redactions + change.redactions
            report.capacity_problem = change.capacity_problem
        if new_topic and any(a.action != "skipped" for a in actions):
            created.append(slug)
            if written:
                _apply_front(store, slug, topic.fields, topic.extra_front)
    report.topics_created = created
    if not dry_run and report.written:
        try:
            report.notices.extend(mem.sync(quiet_when_idle=True).notices)
        except MemlaneError as exc:
            report.notices.append(
                f"the topic files were written but the index was not updated ({exc.message})"
            )
    return report
