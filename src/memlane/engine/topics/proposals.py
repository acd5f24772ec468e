"""Extraction's answer: the LLM's JSON array parsed, and each proposal validated
(types, lengths, a topic name that makes a safe slug, a known memory type)."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from memlane.core.errors import MemlaneError
from memlane.store import topics as store_topics

TITLE_MAX_CHARS = 120
CONTENT_MIN_CHARS = 12
CONTENT_MAX_CHARS = 1000


@dataclass(frozen=True)
class Learning:
    """One validated proposal."""

    topic: str
    slug: str
    title: str
    content: str
    type: str
    #: The short ids of the earlier entries it says it replaces, as the LLM
    #: gave them (engine/shared/earlier.py keeps only the ones it offered).
    supersedes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {
            "topic": self.topic,
            "slug": self.slug,
            "title": self.title,
            "content": self.content,
            "type": self.type,
        }
        return out | ({"supersedes": list(self.supersedes)} if self.supersedes else {})


class AnswerError(ValueError):
    """The answer is not a JSON array of proposals."""


_FENCE_RE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def parse_answer(answer: str) -> list[Any]:
    """The JSON array in *answer* (a code fence around it is tolerated)."""
    text = answer.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise AnswerError("empty answer")
    try:
        value = json.loads(text)
    except ValueError:
        start, end = text.find("["), text.rfind("]")
        if start < 0:
            raise AnswerError("no JSON array in the answer") from None
        if end <= start:
            raise AnswerError("malformed JSON in the answer (unterminated array)") from None
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            raise AnswerError("malformed JSON in the answer") from None
    if not isinstance(value, list):
        raise AnswerError(f"the answer is a JSON {type(value).__name__}, not an array")
    return value


def one_line(text: str) -> str:
    return " ".join(text.split())


def validate(item: Any) -> Learning:
    """One proposal checked strictly; ``ValueError`` says what is wrong."""
    if not isinstance(item, dict):
        raise ValueError("not an object")
    unknown = set(item) - {"topic", "title", "content", "type", "supersedes"}
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}")
    values: dict[str, str] = {}
    for key in ("topic", "title", "content"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key} missing or not text")
        values[key] = value
    kind = item.get("type", store_topics.DEFAULT_TYPE)
    if kind is None:
        kind = store_topics.DEFAULT_TYPE
    if not isinstance(kind, str) or kind.strip().lower() not in store_topics.TOPIC_TYPES:
        raise ValueError(f"unknown type {kind!r}")
    title = one_line(values["title"]).lstrip("#").strip()
    if not title or len(title) > TITLE_MAX_CHARS:
        raise ValueError(f"title empty or over {TITLE_MAX_CHARS} characters")
    content = values["content"].strip()
    if not CONTENT_MIN_CHARS <= len(content) <= CONTENT_MAX_CHARS:
        raise ValueError(
            f"content under {CONTENT_MIN_CHARS} or over {CONTENT_MAX_CHARS} characters"
        )
    if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in title + content):
        raise ValueError("control characters")
    topic = one_line(values["topic"])
    try:
        slug = store_topics.slugify(topic)
    except MemlaneError as exc:
        raise ValueError(f"unusable topic name: {exc.message}") from None
    return Learning(
        topic, slug, title, content, kind.strip().lower(), _supersedes(item.get("supersedes"))
    )


def _supersedes(value: Any) -> tuple[str, ...]:
    """The ids of ``"supersedes"``: a list of them, or one; anything else is no id."""
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(v.strip().lower() for v in values if isinstance(v, str) and v.strip())
