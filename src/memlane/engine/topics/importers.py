"""Migration: pi-memory and Claude Code auto memory into memlane's topic layer.

Both tools keep a directory of markdown files next to a ``MEMORY.md`` index:

- pi-memory (``@yandy0725/pi-memory``): ``<memoryDir>/<hash>/`` where
  ``memoryDir`` is ``~/.pi/memory`` (or ``memoryDir`` in the agent directory's
  ``memory.json``) and ``<hash>`` the first 12 hex digits of the sha256 of the
  project's git root (``git rev-parse --show-toplevel``), else of its absolute
  path. Topic files (``debugging.md``) carry frontmatter ``name``,
  ``description``, ``type``, ``updated`` and one ``## title`` block per entry;
  ``MEMORY.md`` holds one ``- [Name](file.md) — hook`` line per topic.
- Claude Code: ``$CLAUDE_CONFIG_DIR/projects/<encoded>/memory/`` (default
  ``~/.claude``; ``<encoded>`` is the project's main checkout path with every
  character other than a letter or digit turned into ``-``), unless a
  settings file names an ``autoMemoryDirectory``. A memory file holds one
  fact under frontmatter ``name``, ``description``, ``type``; older ones have
  no frontmatter, and ``MEMORY.md`` may hold free-form notes besides its
  pointer lines.

Rules every import follows: every topic and entry lands in
``<store>/topics/`` through ``memlane.store.topics`` (which redacts secrets);
an entry already present (same topic, same title or a suffixed import of it,
same content) is skipped, so re-running adds nothing; the same title with
other content is added under ``"<title> (imported <date>)"``, never
overwriting; whatever cannot be read as entries is kept verbatim in the
``imported-<source>`` topic and reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from memlane.core.errors import MemlaneError, NotFoundError
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file
from memlane.core.scope import repository_dir_of
from memlane.store import topics as store_topics
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR
from memlane.store.redaction import redact
from memlane.store.safe_paths import MARKDOWN_MAX_BYTES

if TYPE_CHECKING:
    from memlane.engine.project import Memory

PI_MEMORY = "pi-memory"
CLAUDE_CODE = "claude-code"
SOURCE_LABELS = {PI_MEMORY: "pi-memory", CLAUDE_CODE: "Claude Code"}
PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
CLAUDE_CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"
PI_HASH_CHARS = 12
# Claude Code cuts an encoded project path at this length and appends a hash
# of the full path; such a directory is found by its prefix.
CLAUDE_NAME_MAX = 200
IMPORT_SUFFIX = "imported"

_POINTER_RE = re.compile(r"^\s*[-*+]\s*\[[^\]]*\]\(\s*<?([^)>\s]+)>?\s*\)")
_FRONT_KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*)|)$")
_HEADING_ONLY_RE = re.compile(r"^#{1,6}(?:[ \t].*)?$")
_BLOCK_SCALARS = ("|", "|-", "|+", ">", ">-", ">+")


# --- the report -----------------------------------------------------------------------------


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


# --- what a source directory holds ----------------------------------------------------------


@dataclass
class _Entry:
    topic: str
    title: str
    content: str
    source: str
    reason: str | None = None  # set: salvaged verbatim


@dataclass
class _Topic:
    slug: str
    source: str
    fields: dict[str, str] = field(default_factory=dict)  # name, description, type, updated
    extra_front: list[str] = field(default_factory=list)  # other frontmatter lines, verbatim
    entries: list[_Entry] = field(default_factory=list)


def _salvage_slug(source: str) -> str:
    return f"imported-{source}"


def _salvage_topic(source: str) -> _Topic:
    label = SOURCE_LABELS[source]
    return _Topic(
        _salvage_slug(source),
        source="",
        fields={
            "name": f"Imported from {label} (kept verbatim)",
            "description": f"Content of {label}'s memory that memlane could not read as topic "
            "entries, kept as it was",
            "type": store_topics.DEFAULT_TYPE,
        },
    )


def _fence(text: str) -> str:
    """*text* in a code fence longer than any backtick run inside it, so it stays verbatim."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


def _salvage(source: str, rel: str, text: str, reason: str, part: str = "") -> _Entry:
    title = f"{rel} {part}".strip()
    return _Entry(_salvage_slug(source), title, _fence(text), rel, reason)


def _slug_for(rel: str) -> str | None:
    stem = rel[:-3] if rel.lower().endswith(".md") else rel
    name = stem.replace("/", "-").replace(os.sep, "-")
    for candidate in (name, f"imported {name}"):
        try:
            return store_topics.slugify(candidate)
        except MemlaneError:
            continue
    return None


def _parse_front(lines: list[str]) -> tuple[dict[str, str], list[str], list[str]] | None:
    """(known fields, other lines verbatim, nested ``metadata.type``) or None when
    a line is neither ``key: value`` nor an indented continuation."""
    fields: dict[str, str] = {}
    extra: list[str] = []
    nested: list[str] = []
    key: str | None = None
    block: list[str] = []

    def close() -> None:
        if key in store_topics.FRONTMATTER_KEYS and key not in fields and block:
            fields[key] = " ".join(part.strip() for part in block if part.strip())

    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            if key is None or key not in store_topics.FRONTMATTER_KEYS:
                extra.append(line)
            continue
        if line[0] in " \t" or line.startswith("- "):
            if key is None:
                return None
            if key in store_topics.FRONTMATTER_KEYS and key not in fields:
                block.append(line)
            else:
                extra.append(line)
                if key == "metadata":
                    match = _FRONT_KEY_RE.match(line.strip())
                    if match and match.group(1) == "type":
                        nested.append(store_topics.parse_value(match.group(2) or ""))
            continue
        close()
        match = _FRONT_KEY_RE.match(line)
        if match is None:
            return None
        key, value = match.group(1), (match.group(2) or "").strip()
        block = []
        if key in store_topics.FRONTMATTER_KEYS and key not in fields:
            if value and value not in _BLOCK_SCALARS:
                fields[key] = store_topics.parse_value(value)
        else:
            extra.append(line)
    close()
    return fields, extra, nested


def _read_text(path: Path) -> tuple[str | None, str | None]:
    """(text, problem): text None when the file is binary, unreadable, too
    large, or no regular file (a FIFO or device would block the import)."""
    try:
        data = read_regular_file(path, max_bytes=MARKDOWN_MAX_BYTES, what="file")
    except (NotRegularFileError, FileTooLargeError) as exc:
        return None, exc.message.replace(f"file {path} is ", "", 1)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if b"\x00" in data:
        return None, "binary file"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        # Latin-1 maps every byte, so the text is kept whole rather than dropped.
        return data.decode("latin-1"), "not UTF-8; read as Latin-1"


def _parse_topic_file(source: str, rel: str, text: str, salvage: _Topic) -> _Topic | None:
    slug = _slug_for(rel)
    if slug is None:
        salvage.entries.append(
            _salvage(source, rel, text, "its file name makes no valid topic name")
        )
        return None
    lines = text.splitlines(keepends=True)
    if (
        lines
        and lines[0].rstrip("\r\n") == "---"
        and not any(line.rstrip("\r\n") == "---" for line in lines[1:])
    ):
        salvage.entries.append(_salvage(source, rel, text, "its frontmatter is never closed"))
        return None
    parsed = store_topics.TopicFile.parse(text)
    topic = _Topic(slug, rel)
    if parsed.has_front:
        front = _parse_front(parsed.front)
        if front is None:
            salvage.entries.append(
                _salvage(
                    source,
                    rel,
                    "---\n" + "".join(parsed.front) + "---",
                    "its frontmatter is not plain key: value lines",
                    "(frontmatter)",
                )
            )
        else:
            fields, extra, nested = front
            topic.fields = fields
            topic.extra_front = extra
            if "type" not in fields and nested:
                fields["type"] = nested[0]
    kind = topic.fields.get("type")
    if kind is not None and kind not in store_topics.TOPIC_TYPES:
        del topic.fields["type"]
        topic.extra_front.append(f"imported_type: {store_topics.render_value(kind)}")
    name = topic.fields.get("name") or store_topics.display_name(rel, slug)
    topic.fields.setdefault("name", name)
    preamble = parsed.preamble.strip()
    if preamble:
        # Text outside any "## " block (a whole Claude Code memory, usually) is
        # one entry titled after the topic.
        topic.entries.append(_Entry(slug, name, preamble, rel))
    for n, entry in enumerate(parsed.entries, 1):
        body = entry.body or entry.title
        if not entry.title.strip():
            salvage.entries.append(
                _salvage(source, rel, entry.text, "an entry heading without a title", f"#{n}")
            )
            continue
        topic.entries.append(_Entry(slug, entry.title, body, rel))
    return topic


def _index_leftover(directory: Path, text: str) -> str | None:
    """MEMORY.md without its pointers to topic files found here, or None
    when nothing but headings is left.

    Pointer lines only repeat what the topic files say; anything else (free
    notes, pointers to files that are gone) is knowledge of its own.
    """
    kept: list[str] = []
    for line in text.splitlines():
        match = _POINTER_RE.match(line)
        if match is not None:
            target = unquote(match.group(1).split("#", 1)[0])
            if target and (directory / target).is_file():
                continue
        kept.append(line)
    if all(not line.strip() or _HEADING_ONLY_RE.match(line.strip()) for line in kept):
        return None
    # Dropped pointer lines leave blank runs behind: one blank line is enough.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def _index_notes(source: str, rest: str) -> _Topic:
    """Claude Code's free-form MEMORY.md notes as entries: one per ``## `` section."""
    label = SOURCE_LABELS[source]
    topic = _Topic(
        f"{source}-index-notes",
        MEMORY_INDEX,
        fields={
            "name": f"{label} MEMORY.md notes",
            "description": f"Lines of {label}'s MEMORY.md that were not pointers to a topic file",
            "type": store_topics.DEFAULT_TYPE,
        },
    )
    parsed = store_topics.TopicFile.parse(rest + "\n")
    sections = [(MEMORY_INDEX, parsed.preamble.strip())]
    sections += [(e.title.strip() or MEMORY_INDEX, e.body) for e in parsed.entries]
    for title, body in sections:
        if all(not ln.strip() or _HEADING_ONLY_RE.match(ln.strip()) for ln in body.splitlines()):
            continue  # a bare heading, or a group whose pointer lines were all dropped
        topic.entries.append(_Entry(topic.slug, title, body, MEMORY_INDEX))
    return topic


def _scan(source: str, directory: Path) -> tuple[list[_Topic], list[str]]:
    """The topics to import from *directory* (the salvage topic last) and the
    files left out, with why."""
    salvage = _salvage_topic(source)
    topics: list[_Topic] = []
    ignored: list[str] = []
    index_topic: _Topic | None = None
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            rel = path.relative_to(directory).as_posix()
            if name.startswith("."):
                ignored.append(f"{rel} (hidden file: tool metadata, not memory)")
                continue
            text, problem = _read_text(path)
            if text is None:
                ignored.append(f"{rel} ({problem})")
                continue
            if not text.strip():
                ignored.append(f"{rel} (empty)")
                continue
            if problem:
                salvage.entries.append(_salvage(source, rel, text, problem))
                continue
            if rel == MEMORY_INDEX:
                rest = _index_leftover(directory, text)
                if rest is None:
                    continue
                if source == PI_MEMORY:
                    # pi-memory's index is pointers only: anything else in it
                    # is kept verbatim rather than read as entries.
                    reason = "MEMORY.md lines that point to no topic file here"
                    salvage.entries.append(_salvage(source, rel, rest, reason))
                else:
                    index_topic = _index_notes(source, rest)
            elif name.lower().endswith(".md"):
                topic = _parse_topic_file(source, rel, text, salvage)
                if topic is not None:
                    topics.append(topic)
            else:
                salvage.entries.append(_salvage(source, rel, text, "not a markdown topic file"))
    if index_topic is not None:
        topics.append(index_topic)
    topics.append(salvage)
    return topics, ignored


# --- planning and applying ------------------------------------------------------------------


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
    entry: _Entry
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

    def decide(self, entry: _Entry) -> _Action:
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


def _run(
    mem: Memory,
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
    topics, report.ignored = _scan(source, directory)
    store = mem.scope.store
    planner = _Planner(store, mem.clock.today())
    plans: list[tuple[_Topic, list[_Action]]] = []
    for topic in topics:
        actions: list[_Action] = []
        for entry in topic.entries:
            try:
                action = planner.decide(entry)
            except MemlaneError as exc:
                # The store would refuse it (an over-long title, say): keep it verbatim.
                whole = f"## {entry.title}\n{entry.content}"
                salvage = _salvage(source, entry.source, whole, exc.message)
                salvage.title = f"{entry.source} {entry.title}"[: store_topics.TITLE_MAX_CHARS]
                action = planner.decide(salvage)
                plans.append((_salvage_topic(source), [action]))
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


# --- pi-memory ------------------------------------------------------------------------------


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _expand(value: str, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return _home(env) / value[2:]
    return Path(value)


def pi_memory_root(env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """pi-memory's ``memoryDir`` and where it came from."""
    environ = os.environ if env is None else env
    agent = environ.get(PI_AGENT_DIR_ENV)
    agent_dir = _expand(agent, environ) if agent else _home(environ) / ".pi" / "agent"
    for name in ("memory.json", "pi-memory.json"):
        config = agent_dir / name
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("memoryDir")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value.strip():
            return _expand(value.strip(), environ), f"memoryDir in {config}"
    return _home(environ) / ".pi" / "memory", "the default memoryDir"


def pi_memory_hash(project_key: str) -> str:
    """pi-memory's directory name for a project: sha256 of its git root (or path), 12 hex."""
    return hashlib.sha256(project_key.encode("utf-8")).hexdigest()[:PI_HASH_CHARS]


def default_pi_memory_dir(mem: Memory, env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """This project's pi-memory directory and a sentence saying how it was derived."""
    root, origin = pi_memory_root(env)
    keys = list(dict.fromkeys([str(mem.scope.repository_dir), os.path.abspath(mem.scope.cwd)]))
    for key in keys:
        candidate = root / pi_memory_hash(key)
        if candidate.is_dir():
            break
    else:
        key = keys[0]
        candidate = root / pi_memory_hash(key)
    how = (
        f"{candidate.name} = first {PI_HASH_CHARS} hex digits of sha256({key!r}), the "
        f"project's git root or absolute path, under {root} ({origin})"
    )
    return candidate, how


def import_pi_memory(
    mem: Memory,
    directory: str | Path | None = None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> ImportReport:
    """Import a pi-memory directory (default: this project's ``~/.pi/memory/<hash>/``)."""
    derivation = None
    if directory is None:
        path, derivation = default_pi_memory_dir(mem, env)
    else:
        path = Path(directory).expanduser().absolute()
    if not path.is_dir():
        hint = "pass the directory: memlane import pi-memory DIR"
        if derivation:
            hint = f"looked there because {derivation}; {hint}"
        raise NotFoundError(f"no pi-memory directory at {path}", hint)
    return _run(mem, PI_MEMORY, path, dry_run=dry_run, derivation=derivation)


# --- Claude Code ----------------------------------------------------------------------------


def claude_project_dir_name(path: str) -> str:
    """Claude Code's directory name for a project: every non-alphanumeric → ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _main_checkout(repo: Path) -> Path:
    """The main checkout of a linked worktree (Claude Code keys memory by it), else *repo*."""
    dot_git = repo / ".git"
    if not dot_git.is_file():
        return repo
    try:
        first = dot_git.read_text(encoding="utf-8").strip()
    except OSError:
        return repo
    if not first.startswith("gitdir:"):
        return repo
    git_dir = (repo / first[len("gitdir:") :].strip()).resolve()
    try:
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return repo
    return common.parent if common.name == ".git" else repo


def _configured_claude_dir(project: Path, config_root: Path, env: Mapping[str, str]) -> Path | None:
    """``autoMemoryDirectory`` from the local project settings or the user's settings."""
    for settings in (project / ".claude" / "settings.local.json", config_root / "settings.json"):
        try:
            value = json.loads(settings.read_text(encoding="utf-8")).get("autoMemoryDirectory")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and (value.startswith("~/") or os.path.isabs(value)):
            return _expand(value, env)
    return None


def default_claude_code_dir(
    mem: Memory, project_dir: str | Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """A project's Claude Code auto-memory directory and how it was derived."""
    environ = os.environ if env is None else env
    configured = environ.get(CLAUDE_CONFIG_DIR_ENV)
    config_root = _expand(configured, environ) if configured else _home(environ) / ".claude"
    if project_dir is None:
        cwd, repo = mem.scope.cwd, mem.scope.repository_dir
    else:
        cwd = Path(project_dir).expanduser().absolute()
        repo = repository_dir_of(cwd)
    custom = _configured_claude_dir(repo, config_root, environ)
    if custom is not None:
        return custom, f"autoMemoryDirectory in the Claude Code settings names {custom}"
    keys = list(dict.fromkeys(str(p) for p in (_main_checkout(repo), repo, cwd)))
    projects = config_root / "projects"
    for key in keys:
        name = claude_project_dir_name(key)
        candidate = projects / name / "memory"
        if not candidate.is_dir() and len(name) > CLAUDE_NAME_MAX:
            cut = sorted(projects.glob(f"{name[:CLAUDE_NAME_MAX]}-*/memory"))
            candidate = cut[0] if len(cut) == 1 else candidate
        if candidate.is_dir():
            break
    else:
        key = keys[0]
        candidate = projects / claude_project_dir_name(key) / "memory"
    how = (
        f"{candidate.parent.name} = the project path {key!r} with every character other "
        f"than a letter or digit turned into '-', under {projects}"
    )
    return candidate, how


def import_claude_code(
    mem: Memory,
    project_dir: str | Path | None = None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> ImportReport:
    """Import Claude Code's auto memory of a project (default: this one).

    *project_dir* is the project whose memory to import; a Claude Code
    ``memory`` directory itself (holding ``MEMORY.md``) is taken as is.
    """
    given = Path(project_dir).expanduser().absolute() if project_dir is not None else None
    if given is not None and given.name == "memory" and (given / MEMORY_INDEX).is_file():
        path, derivation = given, None
    else:
        path, derivation = default_claude_code_dir(mem, given, env)
    if not path.is_dir():
        raise NotFoundError(
            f"no Claude Code auto-memory directory at {path}",
            f"looked there because {derivation}; pass the project with --project DIR"
            if derivation
            else "pass the project with --project DIR",
        )
    return _run(mem, CLAUDE_CODE, path, dry_run=dry_run, derivation=derivation)
