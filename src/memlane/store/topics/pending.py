"""The pending-index marker: a topic file changed, its MEMORY.md line may not have yet.

A writer names the topic in ``<store>/.topics-index-pending.json`` before it
rewrites the file and deletes the marker once the index line follows; a
kill between the two writes leaves it, and the next lock brings those lines
up to date (``settle_index_lines``).
"""

from __future__ import annotations

import json
import logging
from contextlib import suppress
from pathlib import Path

from memlane.core.errors import StoreError
from memlane.core.faults import step
from memlane.store import safe_paths
from memlane.store.topics.codec import TopicFile
from memlane.store.topics.files import read_text_strict, write_atomic
from memlane.store.topics.index import index_line, update_index_line
from memlane.store.topics.names import topic_path
from memlane.store.topics.results import topic_info

log = logging.getLogger("memlane.dream")

INDEX_PENDING_NAME = ".topics-index-pending.json"


def _pending_index_path(store: Path) -> Path:
    return store / INDEX_PENDING_NAME


def begin_index_change(store: Path, slug: str) -> None:
    """Before a topic file changes: say that its MEMORY.md line must follow."""
    write_atomic(_pending_index_path(store), json.dumps({"topics": [slug]}) + "\n")
    step("topic.index_pending")


def end_index_change(store: Path) -> None:
    with suppress(FileNotFoundError):
        _pending_index_path(store).unlink()


def settle_index_lines(store: Path) -> None:
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
    end_index_change(store)
