"""The ``MEMORY.md`` block of the session's stable snapshot."""

from __future__ import annotations

import logging
from pathlib import Path

from memlane.core.settings import TopicSettings
from memlane.store import topics as store_topics
from memlane.store.layout import TOPICS_DIR

log = logging.getLogger("memlane.engine.topics.surfacing")


def memory_index_block(store: Path, settings: TopicSettings) -> str | None:
    """The ``MEMORY.md`` index for the stable snapshot, or None when there is none.

    Byte-stable between rebuilds: it depends only on ``MEMORY.md``.
    """
    if not settings.enabled:
        return None
    try:
        index = store_topics.index_for_snapshot(
            store, settings.mem_index_max_lines, settings.mem_index_max_bytes
        )
    except Exception as exc:
        log.info("MEMORY.md unreadable for the snapshot: %s", exc)
        return None
    if not index.strip():
        return None
    return (
        "## Curated topics (MEMORY.md)\n"
        f"One line per topic file in {TOPICS_DIR}/; relevant ones are shown to you "
        "automatically, and memory_topic search finds their entries.\n\n" + index.strip("\n")
    )
