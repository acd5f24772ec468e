"""The hidden message: the chosen topic files whole, each in a ``<topic>`` block,
within the per-topic and total byte budgets."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from memlane.core.settings import TopicSettings
from memlane.store import topics as store_topics
from memlane.store.layout import TOPICS_DIR

log = logging.getLogger("memlane.engine.topics.surfacing")

#: A description longer than this is clipped in the injected block's tag.
DESCRIPTION_CHARS = 200
#: Below this many bytes left in the total budget a topic is not started.
MIN_TOPIC_BYTES = 256

_CLOSE_TAG_RE = re.compile(r"</(?=topic)", re.IGNORECASE)


def render_topics(
    store: Path, settings: TopicSettings, slugs: Sequence[str]
) -> tuple[str, list[str]]:
    """The message for *slugs* and the slugs it shows ("" and [] for none readable)."""
    per_topic = max(0, settings.auto_surfacing_max_topic_bytes)
    total = max(0, settings.auto_surfacing_max_injection_bytes)
    header = (
        "Curated memory topics that bear on this prompt (auto-surfaced from "
        f"{TOPICS_DIR}/; each is shown once per session, cut where marked; read the "
        "file for the rest):\n"
    )
    used = _size(header)
    blocks: list[str] = []
    shown: list[str] = []
    for slug in slugs:
        try:
            path = store_topics.topic_path(store, slug)
            parsed = store_topics.TopicFile.parse(store_topics.read_text_strict(path))
        except Exception as exc:
            log.info("auto-surfacing cannot read topic %s: %s", slug, exc)
            continue
        if not parsed.entries and not parsed.preamble.strip():
            continue
        name = parsed.get("name") or slug
        kind = parsed.get("type") or store_topics.DEFAULT_TYPE
        description = (parsed.get("description") or "")[:DESCRIPTION_CHARS]
        open_tag = (
            f"\n<topic file={_attr(f'{TOPICS_DIR}/{slug}.md')} name={_attr(name[:80])} "
            f"type={_attr(kind[:20])} description={_attr(description)}>\n"
        )
        close_tag = "\n</topic>\n"
        tags = _size(open_tag) + _size(close_tag)
        # max_topic_bytes bounds the whole block a topic adds, tags included.
        room = min(per_topic, total - used) - tags
        if room < min(MIN_TOPIC_BYTES, per_topic - tags):
            break
        body = (parsed.preamble.strip("\n") + "\n\n" if parsed.preamble.strip() else "") + (
            "".join(e.text for e in parsed.entries).strip("\n")
        )
        # Topic text must not close its own block early.
        body = _CLOSE_TAG_RE.sub(lambda _: "<\\/", body)
        body = cut_bytes(body, room, f"{TOPICS_DIR}/{slug}.md")
        block = open_tag + body + close_tag
        blocks.append(block)
        used += _size(block)
        shown.append(slug)
    if not blocks:
        return "", []
    return header + "".join(blocks), shown


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _attr(value: str) -> str:
    return _CLOSE_TAG_RE.sub(
        lambda _: "<\\/", json.dumps(" ".join(value.split()), ensure_ascii=False)
    )


def cut_bytes(text: str, limit: int, where: str) -> str:
    """*text* within *limit* UTF-8 bytes, marker included when cut.

    Cut at a character boundary, at a line end when one is in the last
    quarter of what fits, so a multi-byte character is never split.
    """
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    marker = f"\n[… cut: {{}} more bytes in {where}]"
    # The marker's own size depends on the number it carries; the largest
    # possible number bounds it.
    reserve = _size(marker.format(len(data)))
    keep = max(0, limit - reserve)
    head = data[:keep].decode("utf-8", "ignore")
    newline = head.rfind("\n")
    if newline >= len(head) * 3 // 4:
        head = head[:newline]
    omitted = len(data) - _size(head)
    out = head + marker.format(omitted)
    if _size(out) > limit:  # a limit smaller than the marker
        return out.encode("utf-8")[:limit].decode("utf-8", "ignore")
    return out
