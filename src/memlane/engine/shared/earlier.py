"""The few earlier memories a writer is shown, so that it can say which one its
new entry corrects (issue 27, core/supersede.py): the offer and the answer.

Capture (distillation) and extraction show their LLM the best few memories
of one fact each under short ids (``m1``, ``m2``, ...; the search for them is
engine/recall/earlier.py). The LLM may answer that a new entry replaces some
of them: ``supersedes: m1`` (a distillation line) or ``"supersedes": ["m1"]``
(an extraction item). Only ids that were offered count, anything else is
ignored; the chosen ones become chunk hashes for
``Memory.write(supersedes=...)`` or markers in a topic entry's text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memlane.core.supersede import supersedes_marker
from memlane.core.types import embedding_text_of

log = logging.getLogger(__name__)

#: At most this many earlier memories are offered.
OFFERED = 3
#: Each memory is shown on one line of at most this many characters.
LINE_CHARS = 240


_ID_RE = re.compile(r"\bm(\d{1,2})\b", re.IGNORECASE)
_TIME_HEADING_RE = re.compile(r"^#{1,6}\s*\d{1,2}:\d{2}\b")


@dataclass(frozen=True)
class Earlier:
    """One memory offered to a writer under a short id."""

    id: str  # "m1"
    chunk_hash: str
    content_hash: str
    date: str | None
    text: str  # one line
    content: str  # the chunk's text

    @property
    def marker(self) -> str:
        """The comment a new entry carries when it replaces this one."""
        return supersedes_marker(self.content_hash)

    def line(self) -> str:
        return f"[{self.id}] ({self.date or 'undated'}) {self.text}"


def one_line(content: str) -> str:
    lines = []
    for raw in embedding_text_of(content).splitlines():
        line = raw.strip()
        if not line or _TIME_HEADING_RE.match(line):
            continue
        lines.append(line.lstrip("#").strip() if line.startswith("#") else line)
    text = " ".join(" ".join(lines).split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1].rstrip() + "…"


def render_earlier(earlier: Sequence[Earlier]) -> str:
    """The ``<earlier_memories>`` block of a prompt (secrets redacted: a
    hand-edited file never went through capture's redaction)."""
    from memlane.store.redaction import redact

    block = "\n".join(e.line() for e in earlier)
    return f"<earlier_memories>\n{redact(block).text}\n</earlier_memories>"


def ids_in(text: str) -> list[str]:
    """The short ids named in *text* ("m1, m3", "[m2]"), lowercase, in order."""
    return list(dict.fromkeys(f"m{int(m.group(1))}" for m in _ID_RE.finditer(text)))


def chosen(ids: Iterable[str], earlier: Sequence[Earlier]) -> list[Earlier]:
    """The offered memories the LLM named; an id that was not offered is ignored."""
    offered = {e.id: e for e in earlier}
    picked = [offered[i] for i in dict.fromkeys(i.strip().lower() for i in ids) if i in offered]
    unknown = [i for i in ids if i.strip().lower() not in offered]
    if unknown:
        log.info("ignored supersedes ids that were not offered: %s", unknown[:5])
    return picked
