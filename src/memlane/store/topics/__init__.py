"""Topic files and ``MEMORY.md``: the curated knowledge layer (docs/topics.md).

A topic file ``<store>/topics/<slug>.md`` is flat frontmatter (``name``,
``description``, ``type``, ``updated``) followed by one ``## <title>`` block
per entry. ``<store>/MEMORY.md`` holds one line per topic,
``- [Name](topics/<slug>.md) — hook``, the hook summarising its entries.

One module per job: ``names`` (slugs and paths), ``codec`` (parse and render
a topic file, byte for byte), ``files`` (one file's read and atomic write),
``index`` (MEMORY.md), ``pending`` (the pending-index marker a killed writer
leaves), ``lock`` (the exclusive ``flock`` that settles what a killed writer
left), ``results`` and ``operations`` (add, remove, list, read, rebuild).
This package only re-exports them, so ``from memlane.store import topics``
reaches every name.
"""

from memlane.store.topics.codec import (
    DESCRIPTION_MAX_CHARS,
    FRONTMATTER_KEYS,
    TITLE_MAX_CHARS,
    TopicEntry,
    TopicFile,
    entry_at_line,
    first_line,
    normalize_content,
    normalize_title,
    parse_value,
    render_value,
)
from memlane.store.topics.files import read_text_strict, write_atomic
from memlane.store.topics.index import (
    INDEX_LINE_MAX_CHARS,
    TRUNCATED_MARKER,
    index_for_snapshot,
    index_line,
    index_usage,
    memory_index_path,
    update_index_line,
)
from memlane.store.topics.lock import LOCK_NAME, holds_lock, locked, settle_interrupted_dream
from memlane.store.topics.names import (
    DEFAULT_TYPE,
    RESERVED_SLUGS,
    SLUG_MAX_CHARS,
    TOPIC_NAME_MAX_CHARS,
    TOPIC_TYPES,
    check_inside,
    display_name,
    is_topic_slug,
    slugify,
    topic_path,
    topics_dir,
)
from memlane.store.topics.operations import (
    add,
    list_topics,
    read_topic,
    rebuild_index,
    remove,
    topic_files,
)
from memlane.store.topics.pending import INDEX_PENDING_NAME
from memlane.store.topics.results import IndexUsage, TopicChange, TopicInfo, topic_info

__all__ = [
    "DEFAULT_TYPE",
    "DESCRIPTION_MAX_CHARS",
    "FRONTMATTER_KEYS",
    "INDEX_LINE_MAX_CHARS",
    "INDEX_PENDING_NAME",
    "LOCK_NAME",
    "RESERVED_SLUGS",
    "SLUG_MAX_CHARS",
    "TITLE_MAX_CHARS",
    "TOPIC_NAME_MAX_CHARS",
    "TOPIC_TYPES",
    "TRUNCATED_MARKER",
    "IndexUsage",
    "TopicChange",
    "TopicEntry",
    "TopicFile",
    "TopicInfo",
    "add",
    "check_inside",
    "display_name",
    "entry_at_line",
    "first_line",
    "holds_lock",
    "index_for_snapshot",
    "index_line",
    "index_usage",
    "is_topic_slug",
    "list_topics",
    "locked",
    "memory_index_path",
    "normalize_content",
    "normalize_title",
    "parse_value",
    "read_text_strict",
    "read_topic",
    "rebuild_index",
    "remove",
    "render_value",
    "settle_interrupted_dream",
    "slugify",
    "topic_files",
    "topic_info",
    "topic_path",
    "topics_dir",
    "update_index_line",
    "write_atomic",
]
