"""Topic names and where their files live: the slug rule and the path checks.

A topic name can never reach outside ``<store>/topics/``: it is reduced to a
slug ``[a-z0-9-]+`` (separators, ``..``, NUL, reserved and over-long names
refused), and the resolved path, links followed, must lie in the real
topics directory of the real store.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from memlane.core.errors import MemlaneError, StoreError
from memlane.core.topic_types import TOPIC_TYPES as TOPIC_TYPES
from memlane.store import safe_paths
from memlane.store.layout import TOPICS_DIR

DEFAULT_TYPE = "feedback"
SLUG_MAX_CHARS = 64
TOPIC_NAME_MAX_CHARS = 200

# Windows device names stay reserved everywhere so a store can be copied to
# any machine; MEMORY would shadow the index.
RESERVED_SLUGS = frozenset(
    {"memory", "con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)

_SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def is_topic_slug(slug: str) -> bool:
    """Whether *slug* names a topic file (well formed and not reserved)."""
    return bool(_SLUG_RE.match(slug)) and slug not in RESERVED_SLUGS


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
    if not is_topic_slug(slug):
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
