"""Topic cards: what each topic file says about itself (``name: description``
plus its entry titles), read once per file version, with its embedding."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError
from memlane.engine.topics.surfacing.terms import term_sets
from memlane.store import topics as store_topics

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger("memlane.engine.topics.surfacing")


@dataclass
class Card:
    """What a topic file says about itself, with its embedding."""

    slug: str
    path: Path
    key: tuple[int, int]  # (mtime_ns, size)
    name: str
    description: str
    type: str
    titles: list[str]
    text: str  # what is embedded: "name: description (titles)"
    terms: frozenset[str] = frozenset()  # set by ``with_terms``
    real: str = ""  # realpath, to meet index hit sources
    vector: npt.NDArray[np.float32] | None = None


def topic_card_files(store: Path) -> list[tuple[str, Path, tuple[int, int]]]:
    """(slug, path, (mtime_ns, size)) of every topic file.

    The same files ``store.topics`` lists, with one ``scandir`` instead of a
    ``realpath`` per file: that costs ~30 ms at 200 topics, a tenth of the
    deadline. A link is skipped, wherever it points.
    """
    try:
        directory = store_topics.topics_dir(store)
        entries = list(os.scandir(directory))
    except (OSError, MemlaneError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.info("auto-surfacing cannot list topics: %s", exc)
        return []
    out = []
    for entry in sorted(entries, key=lambda e: e.name):
        name = entry.name
        if not name.endswith(".md") or name.startswith("."):
            continue
        slug = name[:-3]
        if not store_topics.is_topic_slug(slug):
            continue
        path = Path(entry.path)
        if entry.is_symlink():
            continue  # never read through a link (store/safe_paths.py); the index reports it
        try:
            stat = entry.stat(follow_symlinks=False)
        except (OSError, MemlaneError):
            continue
        if S_ISREG(stat.st_mode):
            out.append((slug, path, (stat.st_mtime_ns, stat.st_size)))
    return out


def read_card(slug: str, path: Path, key: tuple[int, int]) -> Card | None:
    try:
        parsed = store_topics.TopicFile.parse(store_topics.read_text_strict(path))
    except Exception:
        return None
    name = parsed.get("name") or store_topics.display_name(slug, slug)
    description = parsed.get("description") or ""
    titles = parsed.titles
    text = f"{name}: {description}"
    if titles:
        text += " (" + "; ".join(titles) + ")"
    return Card(
        slug=slug,
        path=path,
        key=key,
        name=name,
        description=description,
        type=parsed.get("type") or store_topics.DEFAULT_TYPE,
        titles=titles,
        text=text,
        real=os.path.realpath(path),
    )


def with_terms(cards: Sequence[Card]) -> None:
    """Give *cards* their terms (slug words and card text), all in one batch."""
    texts = [f"{card.slug.replace('-', ' ')} {card.text}" for card in cards]
    for card, found in zip(cards, term_sets(texts), strict=True):
        card.terms = found
