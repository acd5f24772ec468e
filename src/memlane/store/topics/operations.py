"""The locked topic operations: add and remove an entry, list and read topics,
rebuild MEMORY.md. Secrets are redacted before anything is written."""

from __future__ import annotations

import difflib
from datetime import date
from pathlib import Path

from memlane.core.errors import MemlaneError, NotFoundError, StoreError
from memlane.core.settings import MEM_INDEX_MAX_BYTES, MEM_INDEX_MAX_LINES
from memlane.store.layout import TOPICS_DIR
from memlane.store.redaction import UNSCANNABLE, redact
from memlane.store.topics.codec import (
    TopicFile,
    first_line,
    normalize_content,
    normalize_title,
)
from memlane.store.topics.files import read_text_strict, write_atomic
from memlane.store.topics.index import index_line, index_usage, memory_index_path, update_index_line
from memlane.store.topics.lock import locked, settle_interrupted_dream
from memlane.store.topics.names import (
    DEFAULT_TYPE,
    TOPIC_TYPES,
    check_inside,
    display_name,
    is_topic_slug,
    slugify,
    topic_path,
    topics_dir,
)
from memlane.store.topics.pending import begin_index_change, end_index_change
from memlane.store.topics.results import IndexUsage, TopicChange, TopicInfo, topic_info


def topic_files(store: Path) -> list[tuple[str, Path]]:
    """(slug, path) of every topic file, sorted; links are skipped (the index reports them)."""
    settle_interrupted_dream(store)
    directory = topics_dir(store)
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".md" or path.name.startswith("."):
            continue
        slug = path.stem
        if not is_topic_slug(slug):
            continue
        try:
            check_inside(path, directory)
        except StoreError:
            continue
        if path.is_file():
            out.append((slug, path))
    return out


def rebuild_index(store: Path) -> IndexUsage:
    """Write MEMORY.md afresh from the topic files: one line per topic, by slug."""
    with locked(store):
        lines = []
        for slug, path in topic_files(store):
            info = topic_info(slug, path, TopicFile.parse(read_text_strict(path)))
            if info.titles:
                lines.append(index_line(info.name, slug, info.titles))
        write_atomic(memory_index_path(store), "\n".join(lines) + "\n" if lines else "")
    return index_usage(store)


def _check_type(kind: str | None) -> str | None:
    if kind is None or kind == "":
        return None
    if kind not in TOPIC_TYPES:
        raise MemlaneError(
            f"unknown memory type {kind!r}",
            "use one of: user, feedback (default), project, reference",
        )
    return kind


def add(
    store: Path,
    *,
    content: str,
    topic: str,
    title: str,
    type: str | None = None,
    today: date,
    max_lines: int = MEM_INDEX_MAX_LINES,
    max_bytes: int = MEM_INDEX_MAX_BYTES,
) -> TopicChange:
    """Append a ``## title`` block to a topic file (created if new) and
    refresh the topic's MEMORY.md line. Secrets are redacted first."""
    slug = slugify(topic)
    kind = _check_type(type)
    red_title = redact(title)
    red_content = redact(content)
    if UNSCANNABLE in red_title.kinds or UNSCANNABLE in red_content.kinds:
        # Storing the marker instead would lose what the user asked to keep.
        raise StoreError(
            "the entry could not be scanned for secrets, so it was not written",
            "this is a memlane bug or a broken detect-secrets install; reinstall memlane",
        )
    clean_title = normalize_title(red_title.text)
    clean_content = normalize_content(red_content.text)
    day = today.isoformat()
    with locked(store):
        path = topic_path(store, slug)
        existed = path.exists()
        parsed = TopicFile.parse(read_text_strict(path)) if existed else TopicFile()
        if clean_title in parsed.titles:
            raise MemlaneError(
                f"topic {slug}.md already has an entry titled {clean_title!r}",
                "remove it first (memory_topic remove) to replace it, or use a different title",
            )
        if not existed:
            parsed.set("name", display_name(topic, slug))
            parsed.set("description", first_line(clean_content))
            parsed.set("type", kind or DEFAULT_TYPE)
            parsed.set("updated", day)
        else:
            if not parsed.get("name"):
                parsed.set("name", display_name(topic, slug))
            if not parsed.get("description"):
                parsed.set("description", first_line(clean_content))
            if kind is not None and parsed.get("type") != kind:
                parsed.set("type", kind)
            elif not parsed.get("type"):
                parsed.set("type", DEFAULT_TYPE)
            parsed.set("updated", day)
        entry = parsed.append_entry(clean_title, clean_content)
        path.parent.mkdir(parents=True, exist_ok=True)
        check_inside(path, path.parent)
        begin_index_change(store, slug)
        write_atomic(path, parsed.render())
        info = topic_info(slug, path, parsed)
        line = index_line(info.name, slug, info.titles)
        update_index_line(store, slug, line)
        end_index_change(store)
    return TopicChange(
        action="added",
        name=info.name,
        slug=slug,
        path=str(path),
        title=clean_title,
        type=info.type,
        entry=entry.text,
        created_file=not existed,
        index_line=line,
        usage=index_usage(store, max_lines, max_bytes),
        redactions=red_title.count + red_content.count,
    )


def remove(
    store: Path,
    *,
    entry: str,
    today: date,
    max_lines: int = MEM_INDEX_MAX_LINES,
    max_bytes: int = MEM_INDEX_MAX_BYTES,
) -> TopicChange:
    """Delete the one entry titled exactly *entry*, across all topic files.

    No fuzzy removal: close titles are only suggested. The last entry of a
    topic takes its file and its MEMORY.md line with it.
    """
    wanted = " ".join(entry.split())
    if not wanted:
        raise MemlaneError("which entry? the title is empty", "pass the exact entry title")
    with locked(store):
        found: list[tuple[str, Path, TopicFile, int]] = []
        all_titles: list[str] = []
        for slug, path in topic_files(store):
            parsed = TopicFile.parse(read_text_strict(path))
            for i, title in enumerate(parsed.titles):
                all_titles.append(title)
                if title == wanted:
                    found.append((slug, path, parsed, i))
        if not found:
            close = difflib.get_close_matches(wanted, all_titles, n=5, cutoff=0.5)
            close += [t for t in all_titles if wanted.lower() in t.lower() and t not in close][
                : 5 - len(close)
            ]
            hint = (
                "close titles (nothing was removed): " + "; ".join(repr(t) for t in close)
                if close
                else "list the entries with memory_topic list (or `memlane topic list`)"
            )
            raise NotFoundError(f"no topic entry is titled {wanted!r}", hint)
        if len(found) > 1:
            files = ", ".join(f"{TOPICS_DIR}/{slug}.md" for slug, *_ in found)
            raise MemlaneError(
                f"{len(found)} entries are titled {wanted!r}: in {files}",
                "nothing was removed; rename all but one in its file, then remove it",
            )
        slug, path, parsed, i = found[0]
        info_before = topic_info(slug, path, parsed)
        removed = parsed.remove_entry(i)
        begin_index_change(store, slug)
        if parsed.entries:
            if parsed.get("description") == first_line(removed.body):
                # The description was taken from the removed entry: it would
                # keep describing (and surfacing) what is gone.
                parsed.set("description", first_line(parsed.entries[0].body))
            parsed.set("updated", today.isoformat())
            write_atomic(path, parsed.render())
            info = topic_info(slug, path, parsed)
            line: str | None = index_line(info.name, slug, info.titles)
        else:
            try:
                path.unlink()
            except OSError as exc:
                raise StoreError(f"cannot delete {path}: {exc.strerror or exc}") from None
            line = None
        update_index_line(store, slug, line)
        end_index_change(store)
    return TopicChange(
        action="removed",
        name=info_before.name,
        slug=slug,
        path=str(path),
        title=removed.title,
        type=info_before.type,
        entry=removed.text,
        deleted_file=line is None,
        index_line=line,
        usage=index_usage(store, max_lines, max_bytes),
    )


def list_topics(store: Path) -> list[TopicInfo]:
    """Every topic file, by slug, with its frontmatter and entry titles."""
    return [
        topic_info(slug, path, TopicFile.parse(read_text_strict(path)))
        for slug, path in topic_files(store)
    ]


def read_topic(store: Path, topic: str) -> TopicFile:
    """One topic file, parsed; ``NotFoundError`` when there is none."""
    slug = slugify(topic)
    settle_interrupted_dream(store)
    path = topic_path(store, slug)
    if not path.is_file():
        raise NotFoundError(
            f"there is no topic {slug}.md",
            "list the topics with memory_topic list (or `memlane topic list`)",
        )
    return TopicFile.parse(read_text_strict(path))
