"""What a source directory holds: its files read as topics and entries, and
whatever cannot be read so kept verbatim in the ``imported-<source>`` topic."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from memlane.core.errors import MemlaneError
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file
from memlane.engine.topics.importers.report import PI_MEMORY, SOURCE_LABELS
from memlane.store import topics as store_topics
from memlane.store.layout import MEMORY_INDEX
from memlane.store.safe_paths import MARKDOWN_MAX_BYTES

_POINTER_RE = re.compile(r"^\s*[-*+]\s*\[[^\]]*\]\(\s*<?([^)>\s]+)>?\s*\)")
_FRONT_KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*)|)$")
_HEADING_ONLY_RE = re.compile(r"^#{1,6}(?:[ \t].*)?$")
_BLOCK_SCALARS = ("|", "|-", "|+", ">", ">-", ">+")


@dataclass
class SourceEntry:
    topic: str
    title: str
    content: str
    source: str
    reason: str | None = None  # set: salvaged verbatim


@dataclass
class SourceTopic:
    slug: str
    source: str
    fields: dict[str, str] = field(default_factory=dict)  # name, description, type, updated
    extra_front: list[str] = field(default_factory=list)  # other frontmatter lines, verbatim
    entries: list[SourceEntry] = field(default_factory=list)


def salvage_slug(source: str) -> str:
    return f"imported-{source}"


def salvage_topic(source: str) -> SourceTopic:
    label = SOURCE_LABELS[source]
    return SourceTopic(
        salvage_slug(source),
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


def salvage_entry(source: str, rel: str, text: str, reason: str, part: str = "") -> SourceEntry:
    title = f"{rel} {part}".strip()
    return SourceEntry(salvage_slug(source), title, _fence(text), rel, reason)


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


def _parse_topic_file(source: str, rel: str, text: str, salvage: SourceTopic) -> SourceTopic | None:
    slug = _slug_for(rel)
    if slug is None:
        salvage.entries.append(
            salvage_entry(source, rel, text, "its file name makes no valid topic name")
        )
        return None
    lines = text.splitlines(keepends=True)
    if (
        lines
        and lines[0].rstrip("\r\n") == "---"
        and not any(line.rstrip("\r\n") == "---" for line in lines[1:])
    ):
        salvage.entries.append(salvage_entry(source, rel, text, "its frontmatter is never closed"))
        return None
    parsed = store_topics.TopicFile.parse(text)
    topic = SourceTopic(slug, rel)
    if parsed.has_front:
        front = _parse_front(parsed.front)
        if front is None:
            salvage.entries.append(
                salvage_entry(
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
        topic.entries.append(SourceEntry(slug, name, preamble, rel))
    for n, entry in enumerate(parsed.entries, 1):
        body = entry.body or entry.title
        if not entry.title.strip():
            salvage.entries.append(
                salvage_entry(source, rel, entry.text, "an entry heading without a title", f"#{n}")
            )
            continue
        topic.entries.append(SourceEntry(slug, entry.title, body, rel))
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


def _index_notes(source: str, rest: str) -> SourceTopic:
    """Claude Code's free-form MEMORY.md notes as entries: one per ``## `` section."""
    label = SOURCE_LABELS[source]
    topic = SourceTopic(
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
        topic.entries.append(SourceEntry(topic.slug, title, body, MEMORY_INDEX))
    return topic


def scan_source(source: str, directory: Path) -> tuple[list[SourceTopic], list[str]]:
    """The topics to import from *directory* (the salvage topic last) and the
    files left out, with why."""
    salvage = salvage_topic(source)
    topics: list[SourceTopic] = []
    ignored: list[str] = []
    index_topic: SourceTopic | None = None
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
                salvage.entries.append(salvage_entry(source, rel, text, problem))
                continue
            if rel == MEMORY_INDEX:
                rest = _index_leftover(directory, text)
                if rest is None:
                    continue
                if source == PI_MEMORY:
                    # pi-memory's index is pointers only: anything else in it
                    # is kept verbatim rather than read as entries.
                    reason = "MEMORY.md lines that point to no topic file here"
                    salvage.entries.append(salvage_entry(source, rel, rest, reason))
                else:
                    index_topic = _index_notes(source, rest)
            elif name.lower().endswith(".md"):
                topic = _parse_topic_file(source, rel, text, salvage)
                if topic is not None:
                    topics.append(topic)
            else:
                salvage.entries.append(
                    salvage_entry(source, rel, text, "not a markdown topic file")
                )
    if index_topic is not None:
        topics.append(index_topic)
    topics.append(salvage)
    return topics, ignored
