"""Topic files and ``MEMORY.md``: the curated knowledge layer (docs/topics.md).

A topic file ``<store>/topics/<slug>.md`` is flat frontmatter (``name``,
``description``, ``type``, ``updated``) followed by one ``## <title>`` block
per entry. ``<store>/MEMORY.md`` holds one line per topic,
``- [Name](topics/<slug>.md) — hook``, the hook summarising its entries.

Files are kept byte for byte: a parsed file renders back to exactly its
text, and an edit touches only the frontmatter lines and entry blocks it
changes, so hand edits (extra blank lines, unknown keys) survive.

Every rewrite happens under an exclusive ``flock`` on ``<store>/.topics.lock``
and lands through a temporary file in the same directory plus
``os.replace``: two processes adding at once never lose an entry or an
index line, and a reader never sees a half-written file. A writer killed
between the two leaves its temporary file; whoever takes the lock next
deletes it once its writer is gone (store/leftovers.py).

A topic name can never reach outside ``<store>/topics/``: it is reduced to a
slug ``[a-z0-9-]+`` (separators, ``..``, NUL, reserved and over-long names
refused), and the resolved path, links followed, must lie in the real
topics directory of the real store.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import stat
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memlane.core import atomic
from memlane.core.errors import MemlaneError, NotFoundError, StoreError
from memlane.core.faults import step
from memlane.core.locks import flocked
from memlane.core.settings import MEM_INDEX_MAX_BYTES, MEM_INDEX_MAX_LINES
from memlane.store import dream_journal, safe_paths
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR
from memlane.store.leftovers import sweep_writer_temps
from memlane.store.redaction import UNSCANNABLE, redact

log = logging.getLogger("memlane.dream")

TOPIC_TYPES = ("user", "feedback", "project", "reference")
DEFAULT_TYPE = "feedback"
LOCK_NAME = ".topics.lock"
# Names the topics whose file was (or is being) rewritten while their
# MEMORY.md line may not be yet: a kill between the two writes leaves it,
# and the next lock brings those lines up to date (``_settle_index_lines``).
INDEX_PENDING_NAME = ".topics-index-pending.json"
TRUNCATED_MARKER = "[truncated]"
# One MEMORY.md line at most this many characters, hook included.
INDEX_LINE_MAX_CHARS = 150
DESCRIPTION_MAX_CHARS = 150
SLUG_MAX_CHARS = 64
TOPIC_NAME_MAX_CHARS = 200
TITLE_MAX_CHARS = 200
FRONTMATTER_KEYS = ("name", "description", "type", "updated")

# Windows device names stay reserved everywhere so a store can be copied to
# any machine; MEMORY would shadow the index.
RESERVED_SLUGS = frozenset(
    {"memory", "con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)

_FENCE = "---"
_ENTRY_HEADING_RE = re.compile(r"^##[ \t]+(.*?)[ \t]*#*[ \t]*$")
_CONTENT_HEADING_RE = re.compile(r"^(#{1,2})(?=[ \t])")
_FRONT_LINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:[ \t]?(.*)$")
_PLAIN_VALUE_RE = re.compile(r"^[^\s\"'#\[\]{}&*!|>%@`,?:-][^\n]*$")
_YAMLISH_SCALAR_RE = re.compile(
    r"^(?:true|false|yes|no|on|off|null|~|[-+]?(?:\d[\d_]*)?\.?\d+(?:[eE][-+]?\d+)?)$",
    re.IGNORECASE,
)
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _lines(text: str) -> list[str]:
    """Lines with their ends, split at ``\\n`` only (as the chunker counts them)."""
    return _LINE_RE.findall(text)


# --- names --------------------------------------------------------------------------------


def slugify(topic: str) -> str:
    """The slug of a topic as given (``"debugging.md"``, ``"Debugging Tips"``).

    Raises ``MemlaneError`` for anything that could name a path outside the
    topics directory or a reserved file, rather than silently mangling it.
    """
    if not isinstance(topic, str):
        raise MemlaneError(f"a topic name must be text, got {topic!r}")
    hint = 'name a topic in plain words or as a file name, e.g. "Debugging Tips" or "debugging.md"'
    if "\x00" in topic:
        raise MemlaneError("a topic name cannot contain a NUL byte", hint)
    raw = topic.strip()
    if not raw:
        raise MemlaneError("the topic name is empty", hint)
    if len(raw) > TOPIC_NAME_MAX_CHARS:
        raise MemlaneError(
            f"the topic name is too long ({len(raw)} characters, at most {TOPIC_NAME_MAX_CHARS})",
            hint,
        )
    if "/" in raw or "\\" in raw or os.sep in raw or (os.altsep and os.altsep in raw):
        raise MemlaneError(
            f"the topic name {topic!r} contains a path separator",
            "topics live directly in <store>/topics/; " + hint,
        )
    if ".." in raw:
        raise MemlaneError(f"the topic name {topic!r} contains '..'", hint)
    if raw.lower().endswith(".md"):
        raw = raw[:-3]
    folded = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    if not slug:
        raise MemlaneError(
            f"the topic name {topic!r} has no letters or digits to make a file name from",
            'use latin letters or digits, e.g. "Debugging Tips"',
        )
    if len(slug) > SLUG_MAX_CHARS:
        raise MemlaneError(
            f"the topic name {topic!r} is too long for a file name "
            f"({len(slug)} characters, at most {SLUG_MAX_CHARS})",
            "use a shorter topic name",
        )
    if slug in RESERVED_SLUGS:
        raise MemlaneError(
            f"{slug!r} is a reserved name and cannot be a topic",
            "pick another topic name",
        )
    return slug


def display_name(topic: str, slug: str) -> str:
    """The ``name`` a new topic gets: as typed, or from the slug for a file name."""
    raw = " ".join(topic.split())
    if raw.lower().endswith(".md") or not any(ch.isupper() or ch == " " for ch in raw):
        return " ".join(part.capitalize() for part in slug.split("-"))
    return raw


def topics_dir(store: Path) -> Path:
    """``<store>/topics``, refused when it is a link or resolves out of the store
    (or the store itself is reached through a link, ``safe_paths.check_store_root``)."""
    root = safe_paths.check_store_root(store)
    directory = store.expanduser() / TOPICS_DIR
    if directory.is_symlink():
        raise StoreError(
            f"{directory} is a symbolic link; topic files must live in the store itself",
            "replace the link with a real directory",
        )
    real = directory.resolve()
    if real.parent != root:
        raise StoreError(f"{directory} resolves outside the store ({real})")
    return directory


def topic_path(store: Path, slug: str) -> Path:
    """The file of a (validated) slug; a link out of the topics directory is refused."""
    if not _SLUG_RE.match(slug) or slug in RESERVED_SLUGS:
        raise MemlaneError(f"{slug!r} is not a valid topic slug")
    directory = topics_dir(store)
    path = directory / f"{slug}.md"
    check_inside(path, directory)
    return path


def check_inside(path: Path, directory: Path) -> None:
    """Refuse a topic file that is a link (wherever it points) or lies outside *directory*."""
    real_dir = directory.resolve()
    real = path.resolve()
    if real.parent != real_dir or (path.is_symlink() and not real.is_file()):
        raise safe_paths.UnsafePathError(
            f"{path} points outside the topics directory ({real})",
            "topic files must be plain files in <store>/topics/; remove the link",
        )
    if path.is_symlink():
        raise safe_paths.link_error(path)


# --- frontmatter ----------------------------------------------------------------------------


def parse_value(raw: str) -> str:
    """A frontmatter value: plain, ``"double"`` (JSON escapes) or ``'single'`` quoted."""
    text = raw.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            value = json.loads(text)
        except ValueError:
            return text[1:-1]
        return value if isinstance(value, str) else text[1:-1]
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def render_value(value: str) -> str:
    """A frontmatter value, quoted only when a YAML reader would misread it plain."""
    if (
        value
        and _PLAIN_VALUE_RE.match(value)
        and value == value.strip()
        and ": " not in value
        and " #" not in value
        and not _YAMLISH_SCALAR_RE.match(value)
    ) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return value
    return json.dumps(value, ensure_ascii=False)


# --- topic file -----------------------------------------------------------------------------


@dataclass
class TopicEntry:
    """One ``## title`` block, kept verbatim (heading line to the next heading)."""

    title: str
    text: str

    @property
    def body(self) -> str:
        """The entry's text without its heading, trimmed."""
        return self.text.split("\n", 1)[1].strip() if "\n" in self.text else ""


@dataclass
class TopicFile:
    """A parsed topic file. ``render()`` gives back exactly the parsed text."""

    front: list[str] = field(default_factory=list)  # frontmatter lines, with "\n"
    has_front: bool = False
    preamble: str = ""  # between the frontmatter and the first entry
    fences: tuple[str, str] = (f"{_FENCE}\n", f"{_FENCE}\n")  # as written (CRLF kept)
    entries: list[TopicEntry] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> TopicFile:
        lines = _lines(text)
        out = cls()
        rest = lines
        if lines and lines[0].rstrip("\r\n") == _FENCE:
            for i in range(1, len(lines)):
                if lines[i].rstrip("\r\n") == _FENCE:
                    out.has_front = True
                    out.fences = (lines[0], lines[i])
                    out.front = lines[1:i]
                    rest = lines[i + 1 :]
                    break
        preamble: list[str] = []
        current: list[str] | None = None
        title = ""
        for line in rest:
            match = _ENTRY_HEADING_RE.match(line.rstrip("\r\n"))
            if match is not None:
                if current is not None:
                    out.entries.append(TopicEntry(title, "".join(current)))
                current, title = [line], match.group(1).strip()
            elif current is not None:
                current.append(line)
            else:
                preamble.append(line)
        if current is not None:
            out.entries.append(TopicEntry(title, "".join(current)))
        out.preamble = "".join(preamble)
        return out

    def render(self) -> str:
        head = "".join([self.fences[0], *self.front, self.fences[1]]) if self.has_front else ""
        return head + self.preamble + "".join(entry.text for entry in self.entries)

    def get(self, key: str) -> str | None:
        for line in self.front:
            match = _FRONT_LINE_RE.match(line.rstrip("\r\n"))
            if match is not None and match.group(1) == key:
                return parse_value(match.group(2))
        return None

    def set(self, key: str, value: str) -> None:
        """Set one frontmatter field, rewriting only its line (appended if new)."""
        line = f"{key}: {render_value(value)}\n"
        self.has_front = True
        for i, existing in enumerate(self.front):
            match = _FRONT_LINE_RE.match(existing.rstrip("\r\n"))
            if match is not None and match.group(1) == key:
                self.front[i] = line
                return
        if self.front and not self.front[-1].endswith("\n"):
            self.front[-1] += "\n"
        self.front.append(line)

    @property
    def titles(self) -> list[str]:
        return [entry.title for entry in self.entries]

    def append_entry(self, title: str, content: str) -> TopicEntry:
        """Add a block after the last, separated from it by one blank line."""
        entry = TopicEntry(title, f"## {title}\n{content}\n")
        if self.entries:
            last = self.entries[-1]
            if not last.text.endswith("\n"):
                last.text += "\n"
            if not last.text.endswith("\n\n"):
                last.text += "\n"
        elif self.preamble.strip() == "":
            self.preamble = "\n" if self.has_front else ""
        else:
            self.preamble = self.preamble.rstrip("\n") + "\n\n"
        self.entries.append(entry)
        return entry

    def remove_entry(self, index: int) -> TopicEntry:
        removed = self.entries.pop(index)
        if self.entries and index == len(self.entries):
            # The new last block should not leave a dangling blank line.
            self.entries[-1].text = self.entries[-1].text.rstrip("\n") + "\n"
        return removed


# --- results --------------------------------------------------------------------------------


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
            f"MEMORY.md is over capacity: {' and '.join(self.over)}. The entry was saved, "
            "but new sessions only see the index up to the limit (the rest is cut with "
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


# --- file I/O -------------------------------------------------------------------------------


# The locks this thread holds, by (device, inode) of the lock file: a reader
# that finds a dream journal must not wait for a lock its own thread holds
# (flock locks are per open file, so that wait would never end).
_held = threading.local()


def _held_keys() -> set[tuple[int, int]]:
    keys: set[tuple[int, int]] | None = getattr(_held, "keys", None)
    if keys is None:
        keys = _held.keys = set()
    return keys


def holds_lock(store: Path) -> bool:
    """Whether this thread is inside ``locked(store)``."""
    try:
        info = os.stat(store / LOCK_NAME)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in _held_keys()


@contextmanager
def locked(store: Path, *, recover: bool = True) -> Iterator[None]:
    """Exclusive lock over every topic and index rewrite of *store*.

    A dream journal found on taking the lock is an apply that was killed
    midway: it is settled (``dream_journal.recover``) before the caller sees
    any file, so nobody reads or writes on top of half a dream. The check is
    one ``exists()``. *recover* False is for ``engine/dream``, which recovers
    itself to report what it did.
    """
    try:
        safe_paths.check_store_root(store)
        store.mkdir(parents=True, exist_ok=True)
        # Never a link (safe_paths): the lock file is opened read-write.
        fd = safe_paths.open_store_file(store, store / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise StoreError(
            f"cannot lock the topic files in {store}: {exc.strerror or exc}",
            "check that the store directory is writable",
        ) from None
    try:
        with flocked(fd):
            step("topic.locked")
            info = os.fstat(fd)
            key = (info.st_dev, info.st_ino)
            _held_keys().add(key)
            try:
                if recover and dream_journal.journal_path(store).exists():
                    message = dream_journal.recover(store).render()
                    if message:
                        log.warning("%s: %s", store, message)
                sweep_writer_temps([store, store / TOPICS_DIR], _filesystem_now(fd))
                _settle_index_lines(store)
                yield
            finally:
                _held_keys().discard(key)
    finally:
        os.close(fd)


def _pending_index_path(store: Path) -> Path:
    return store / INDEX_PENDING_NAME


def _begin_index_change(store: Path, slug: str) -> None:
    """Before a topic file changes: say that its MEMORY.md line must follow."""
    write_atomic(_pending_index_path(store), json.dumps({"topics": [slug]}) + "\n")
    step("topic.index_pending")


def _end_index_change(store: Path) -> None:
    with suppress(FileNotFoundError):
        _pending_index_path(store).unlink()


def _settle_index_lines(store: Path) -> None:
    """Under the lock: give each topic a killed add or remove left behind the
    MEMORY.md line its file now calls for (or none, when the file is gone)."""
    path = _pending_index_path(store)
    try:
        slugs = [str(slug) for slug in json.loads(safe_paths.read_text(store, path))["topics"]]
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError, StoreError) as exc:
        log.warning("%s: cannot read %s: %s", store, path.name, exc)
        return
    for slug in slugs:
        topic = topic_path(store, slug)
        line: str | None = None
        if topic.exists():
            parsed = TopicFile.parse(read_text_strict(topic))
            if parsed.entries:
                info = topic_info(slug, topic, parsed)
                line = index_line(info.name, slug, info.titles)
        update_index_line(store, slug, line)
    _end_index_change(store)


def _filesystem_now(fd: int) -> float | None:
    """Now, as the filesystem stamps files: the age of a leftover temporary file
    is measured on the clock that dated it (a network share's may differ).

    A change of mode (to the same mode) makes the kernel stamp the lock
    file's ctime with its own clock; unlike ``utime``, nothing in user space
    chooses that time (a time-shifting library rewrites utime's "now")."""
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode))
        return os.fstat(fd).st_ctime
    except OSError:
        return None


def settle_interrupted_dream(store: Path) -> None:
    """For readers that take no lock: when a dream journal is there, take the
    lock once, which settles it (or waits for a dream being applied right now)."""
    if dream_journal.journal_path(store).exists() and not holds_lock(store):
        with locked(store):
            pass


def write_atomic(path: Path, text: str, *, new_file_mode: int | None = None) -> None:
    """Replace *path* with *text* in one rename (``core/atomic``); the file keeps
    its permissions, and errors are worded for the store.

    ``new_file_mode`` sets the permissions of a file that does not exist yet
    (a dream plan holds topic text: owner only).
    """
    try:
        data = text.encode("utf-8")
    except UnicodeError:
        raise StoreError(
            f"cannot write {path}: the text is not valid UTF-8",
            "re-encode the input as UTF-8 and try again; nothing was changed",
        ) from None
    try:
        atomic.write_atomic(path, data, new_file_mode=new_file_mode, fault_prefix="topic")
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}",
            "check that the store directory is writable and the disk is not full",
        ) from None


def read_text_strict(path: Path) -> str:
    """A topic file or ``MEMORY.md`` as text ("" when missing); a link is refused.

    The directories on the way are the caller's to have checked
    (``topic_path``, ``memory_index_path``); the file itself is opened with
    ``O_NOFOLLOW``, so a link never puts another file's text in the store.
    """
    try:
        fd = safe_paths.open_nofollow(path, os.O_RDONLY)
        try:
            return safe_paths.read_fd(fd).decode("utf-8")
        finally:
            os.close(fd)
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise StoreError(
            f"cannot read {path}: it is not valid UTF-8",
            "re-save the file as UTF-8 (or move it out of the store); nothing was changed",
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read {path}: {exc.strerror or exc}",
            "check that your user can read it; nothing was changed",
        ) from None


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
        if not _SLUG_RE.match(slug) or slug in RESERVED_SLUGS:
            continue
        try:
            check_inside(path, directory)
        except StoreError:
            continue
        if path.is_file():
            out.append((slug, path))
    return out


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


# --- MEMORY.md ------------------------------------------------------------------------------


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


# --- operations -----------------------------------------------------------------------------


def normalize_title(title: str) -> str:
    cleaned = " ".join(title.split()).lstrip("#").strip()
    if not cleaned:
        raise MemlaneError(
            "the entry title is empty",
            "give a short, self-contained title: it is what future sessions see in MEMORY.md",
        )
    if len(cleaned) > TITLE_MAX_CHARS:
        raise MemlaneError(
            f"the entry title is too long ({len(cleaned)} characters, at most {TITLE_MAX_CHARS})",
            "keep the title to one line and put the details in the content",
        )
    return cleaned


def normalize_content(content: str) -> str:
    lines = [line.rstrip() for line in content.strip("\n").splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise MemlaneError("nothing to save: the content is empty", "pass the knowledge to keep")
    # A level-1 or level-2 heading inside the content would split the entry
    # (or forge another one), so it becomes a level-3 heading.
    return "\n".join(_CONTENT_HEADING_RE.sub("###", line) for line in lines)


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
        _begin_index_change(store, slug)
        write_atomic(path, parsed.render())
        info = topic_info(slug, path, parsed)
        line = index_line(info.name, slug, info.titles)
        update_index_line(store, slug, line)
        _end_index_change(store)
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


def first_line(text: str) -> str:
    for line in text.splitlines():
        cleaned = " ".join(line.strip().lstrip("#-*+ ").split())
        if cleaned:
            if len(cleaned) > DESCRIPTION_MAX_CHARS:
                cleaned = cleaned[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
            return cleaned
    return ""


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
        _begin_index_change(store, slug)
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
        _end_index_change(store)
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


def entry_at_line(parsed: TopicFile, line: int) -> TopicEntry | None:
    """The entry whose block holds 1-based *line* of the rendered file."""
    current = 1
    if parsed.has_front:
        current += len(parsed.front) + 2
    current += len(_lines(parsed.preamble))
    for entry in parsed.entries:
        size = len(_lines(entry.text))
        if current <= line < current + size:
            return entry
        current += size
    return None
