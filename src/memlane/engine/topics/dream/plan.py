"""Phase 4 of a dream: the ``DreamPlan`` (file changes, diff, render), ``build_plan`` with
the rebuilt ``MEMORY.md``, and the plan file (``save_plan``, ``load_plan``, ``from_json``)."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memlane.core.errors import MemlaneError, StoreError
from memlane.engine.topics.dream.consolidate import RawPlan
from memlane.engine.topics.dream.errors import DreamError, _bad_file
from memlane.engine.topics.dream.orient import Orientation, Signal
from memlane.store import topics as T
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR

#: Version of the plan file (``DreamPlan.to_json``); a plan of another version is refused.
PLAN_FORMAT_VERSION = 1

_INDEX_TARGET_RE = re.compile(r"\]\(" + re.escape(TOPICS_DIR) + r"/([a-z0-9-]+)\.md\)")


# --- 4. prune & index: the plan ---------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    path: Path
    relpath: str  # relative to the store, for diffs and messages
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file is deleted

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "update"

    def diff(self) -> str:
        old = [] if self.before is None else self.before.splitlines(keepends=True)
        new = [] if self.after is None else self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile="/dev/null" if self.before is None else f"a/{self.relpath}",
            tofile="/dev/null" if self.after is None else f"b/{self.relpath}",
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )


@dataclass
class DreamPlan:
    store: Path
    changes: list[FileChange] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    journal_entries: int = 0
    model: str | None = None
    #: The plan file it was read from (``load_plan``): a stale plan says to plan again.
    from_file: Path | None = field(default=None, compare=False)

    @property
    def empty(self) -> bool:
        return not self.changes

    def diff(self) -> str:
        return "".join(change.diff() for change in self.changes)

    def render(self) -> str:
        if self.empty:
            return "Nothing to consolidate: the topic files are already in order."
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.action] = counts.get(change.action, 0) + 1
        head = ", ".join(f"{n} to {action}" for action, n in counts.items())
        lines = [f"Dream plan ({self.model or 'LLM'}): {len(self.changes)} file(s), {head}."]
        lines += [f"- {line}" for line in self.summary]
        return "\n".join(lines) + "\n\n" + self.diff()

    def to_json(self) -> dict[str, Any]:
        """The whole plan: what a host shows (summary, ``diff`` per file) and
        what ``from_json`` needs to apply exactly this plan (``before`` and
        ``after`` of every file, null for a file that does not exist)."""
        return {
            "format_version": PLAN_FORMAT_VERSION,
            "store": str(self.store),
            "model": self.model,
            "summary": list(self.summary),
            "signals": [s.to_json() for s in self.signals],
            "journal_entries": self.journal_entries,
            "changes": [
                {
                    "file": c.relpath,
                    "action": c.action,
                    "before": c.before,
                    "after": c.after,
                    "diff": c.diff(),
                }
                for c in self.changes
            ],
        }

    @classmethod
    def from_json(cls, data: Any, *, store: Path) -> DreamPlan:
        """A plan written by ``to_json``, for *store* (the store it will be
        applied to); ``DreamPlanError`` for anything off: another version or
        store, unknown keys, a file that is neither ``MEMORY.md`` nor a topic
        file of this store, an ``action`` or ``diff`` that does not say what
        the texts do. Whether the files still hold the ``before`` texts is
        ``apply_plan``'s check, made under the lock."""
        if not isinstance(data, dict):
            raise _bad_file("it is not a JSON object")
        version = data.get("format_version")
        if version != PLAN_FORMAT_VERSION:
            raise _bad_file(
                f"its format_version is {version!r}, this memlane reads {PLAN_FORMAT_VERSION}"
            )
        extra = set(data) - _PLAN_KEYS
        if extra:
            raise _bad_file(f"unknown key(s) {', '.join(sorted(extra))}")
        raw_store = data.get("store")
        if not isinstance(raw_store, str) or not raw_store:
            raise _bad_file("it names no store")
        if Path(raw_store).expanduser().resolve() != store.expanduser().resolve():
            raise _bad_file(f"it was made for the store {raw_store}, not {store}")
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise _bad_file("model must be text or null")
        summary = data.get("summary", [])
        if not isinstance(summary, list) or not all(isinstance(x, str) for x in summary):
            raise _bad_file("summary must be a list of lines")
        raw_signals = data.get("signals", [])
        if not isinstance(raw_signals, list):
            raise _bad_file("signals must be a list")
        journal = data.get("journal_entries", 0)
        if isinstance(journal, bool) or not isinstance(journal, int) or journal < 0:
            raise _bad_file("journal_entries must be a count")
        raw_changes = data.get("changes")
        if not isinstance(raw_changes, list):
            raise _bad_file("it has no changes list")
        changes: list[FileChange] = []
        seen: set[str] = set()
        for n, raw in enumerate(raw_changes, 1):
            change = _change_from_json(raw, n, store)
            if change.relpath in seen:
                raise _bad_file(f"it changes {change.relpath} twice")
            seen.add(change.relpath)
            changes.append(change)
        return cls(
            store=store,
            changes=changes,
            summary=list(summary),
            signals=[Signal.from_json(s) for s in raw_signals],
            journal_entries=journal,
            model=model,
        )


_PLAN_KEYS = {
    "format_version",
    "store",
    "model",
    "summary",
    "signals",
    "journal_entries",
    "changes",
}
_CHANGE_KEYS = {"file", "action", "before", "after", "diff"}
_TOPIC_FILE_RE = re.compile(r"^" + re.escape(TOPICS_DIR) + r"/([^/\\]+)\.md$")


def _change_from_json(raw: Any, n: int, store: Path) -> FileChange:
    if not isinstance(raw, dict):
        raise _bad_file(f"change #{n} is not an object")
    extra = set(raw) - _CHANGE_KEYS
    if extra:
        raise _bad_file(f"change #{n} has unknown key(s) {', '.join(sorted(extra))}")
    relpath, before, after = raw.get("file"), raw.get("before"), raw.get("after")
    if not isinstance(relpath, str):
        raise _bad_file(f"change #{n} names no file")
    if before is not None and not isinstance(before, str):
        raise _bad_file(f"{relpath}: before must be text or null")
    if after is not None and not isinstance(after, str):
        raise _bad_file(f"{relpath}: after must be text or null")
    if before is None and after is None:
        raise _bad_file(f"{relpath}: before and after cannot both be null")
    if before == after:
        raise _bad_file(f"{relpath}: before and after are the same")
    change = FileChange(_plan_path(relpath, store), relpath, before, after)
    # What a host showed is action and diff; they must say what the texts do.
    if "action" in raw and raw["action"] != change.action:
        raise _bad_file(f"{relpath}: action {raw['action']!r} but the texts {change.action} it")
    if "diff" in raw and raw["diff"] != change.diff():
        raise _bad_file(f"{relpath}: its diff is not the diff of its texts")
    return change


def _plan_path(relpath: str, store: Path) -> Path:
    """``<store>/MEMORY.md`` or a topic file of *store*, through the store's
    own checks (slug, reserved names, links out of ``topics/``)."""
    if relpath == MEMORY_INDEX:
        return T.memory_index_path(store)
    match = _TOPIC_FILE_RE.match(relpath)
    if match is None:
        raise _bad_file(f"{relpath!r} is neither {MEMORY_INDEX} nor a file in {TOPICS_DIR}/")
    try:
        return T.topic_path(store, match.group(1))
    except MemlaneError as exc:
        raise _bad_file(f"{relpath!r} is refused ({exc.message})") from None


def save_plan(plan: DreamPlan, path: Path) -> None:
    """Write ``plan.to_json()`` to *path*, readable by its owner only: it
    holds the topic files' text."""
    text = json.dumps(plan.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        T.write_atomic(path, text, new_file_mode=0o600)
    except StoreError as exc:
        raise DreamError(f"cannot write the plan: {exc.message}") from None


def load_plan(path: Path, store: Path) -> DreamPlan:
    """The plan saved in *path*, validated for *store* (``DreamPlan.from_json``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DreamError(
            f"cannot read the dream plan {path}: {reason}",
            "plan again: `memlane dream --dry-run --save-plan FILE`",
        ) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _bad_file(f"it is not JSON ({exc})") from None
    plan = DreamPlan.from_json(data, store=store)
    plan.from_file = path
    return plan


def build_plan(
    orientation: Orientation, raw: RawPlan, *, today: date, signals: list[Signal] | None = None
) -> DreamPlan:
    """Phase 4: render the changed topic files and the new MEMORY.md."""
    store = orientation.store
    changes: list[FileChange] = []
    titles: dict[str, tuple[str, list[str]]] = {
        slug: (state.info.name, state.info.titles) for slug, state in orientation.topics.items()
    }
    for topic in raw.topics:
        state = orientation.topics.get(topic.slug)
        path = T.topic_path(store, topic.slug)
        before = state.text if state is not None else None
        parsed = T.TopicFile.parse(state.text) if state is not None else T.TopicFile()
        name = topic.name or parsed.get("name") or T.display_name(topic.slug, topic.slug)
        parsed.set("name", name)
        parsed.set(
            "description",
            _clip(topic.description or parsed.get("description") or "")
            or T.first_line(topic.entries[0].content),
        )
        parsed.set("type", topic.type or parsed.get("type") or T.DEFAULT_TYPE)
        parsed.set("updated", parsed.get("updated") or today.isoformat())
        parsed.entries = []
        for entry in topic.entries:
            parsed.append_entry(entry.title, entry.content)
        after = parsed.render()
        if after != before:
            # The file changes today, so its date says so, as add does.
            parsed.set("updated", today.isoformat())
            after = parsed.render()
            changes.append(FileChange(path, f"{TOPICS_DIR}/{topic.slug}.md", before, after))
        titles[topic.slug] = (name, [e.title for e in topic.entries])
    for slug in raw.delete:
        state = orientation.topics[slug]
        changes.append(FileChange(state.path, f"{TOPICS_DIR}/{slug}.md", state.text, None))
        del titles[slug]
    index_after = rebuild_index_text(orientation.index_text, titles)
    if index_after != orientation.index_text:
        before_index = orientation.index_text if T.memory_index_path(store).exists() else None
        changes.append(
            FileChange(T.memory_index_path(store), MEMORY_INDEX, before_index, index_after)
        )
    return DreamPlan(
        store=store,
        changes=changes,
        summary=list(raw.summary),
        signals=list(signals or []),
        journal_entries=len(orientation.journal),
    )


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > T.DESCRIPTION_MAX_CHARS:
        text = text[: T.DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
    return text


def rebuild_index_text(current: str, topics: dict[str, tuple[str, list[str]]]) -> str:
    """MEMORY.md with one recomputed line per topic (*topics*: slug → name,
    titles): a topic's line stays where it was, lines of topics that are
    gone are dropped, new topics are appended by slug, and lines that are
    not topic lines (the user's own notes) are kept."""
    kept: list[str] = []
    placed: set[str] = set()
    for line in current.splitlines():
        match = _INDEX_TARGET_RE.search(line)
        if match is None:
            kept.append(line)
            continue
        slug = match.group(1)
        if slug in placed or slug not in topics or not topics[slug][1]:
            continue
        name, entry_titles = topics[slug]
        kept.append(T.index_line(name, slug, entry_titles))
        placed.add(slug)
    for slug in sorted(topics):
        name, entry_titles = topics[slug]
        if slug not in placed and entry_titles:
            kept.append(T.index_line(name, slug, entry_titles))
    return "\n".join(kept) + "\n" if kept else ""
