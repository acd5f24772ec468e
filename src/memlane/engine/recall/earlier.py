"""The few earlier memories a writer is shown, so that it can say which one its
new entry corrects (issue 27, core/supersede.py).

Capture (distillation) and extraction search the store for what an exchange
is about before they ask their LLM, and show it the best few memories of one
fact each under short ids (``m1``, ``m2``, ...). The LLM may answer that a new
entry replaces some of them: ``supersedes: m1`` (a distillation line) or
``"supersedes": ["m1"]`` (an extraction item). Only ids that were offered
count, anything else is ignored; the chosen ones become chunk hashes for
``Memory.write(supersedes=...)`` or markers in a topic entry's text. Nothing
offered, or nothing found: the prompt is exactly what it was before.

Only entries of one fact are offered (``trust.one_fact``): a marker outdates
an entry as a whole, and a session summary of many bullets is at most partly
outdated. An entry already outdated is not offered, nor an echo (an
undistilled digest, a note of questions: ``trust.is_echo``), which states no
fact to correct.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlane.core.supersede import supersedes_marker
from memlane.core.types import Kind, SearchMode, content_hash_of, embedding_text_of
from memlane.engine.recall.request import SearchRequest
from memlane.engine.recall.router import search
from memlane.engine.recall.trust import is_echo, one_fact

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory

log = logging.getLogger(__name__)

#: At most this many earlier memories are offered.
OFFERED = 3
#: The search is asked for this many more, as some are not offered.
LOOKAHEAD = 5
#: The query: the start of the exchange.
QUERY_CHARS = 1000
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


def _one_line(content: str) -> str:
    lines = []
    for raw in embedding_text_of(content).splitlines():
        line = raw.strip()
        if not line or _TIME_HEADING_RE.match(line):
            continue
        lines.append(line.lstrip("#").strip() if line.startswith("#") else line)
    text = " ".join(" ".join(lines).split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1].rstrip() + "…"


def earlier_memories(
    memory: ProjectMemory, query: str, *, kind: Kind | None = None, k: int = OFFERED
) -> list[Earlier]:
    """The best *k* memories of one fact for *query*; [] when none, or on any failure
    (a writer never waits on this: it only gets less to go on)."""
    if not query.strip():
        return []
    # A model not in memory yet is not loaded for this: on a new user's first
    # session end (or a fresh model cache) that load alone outlasts the
    # capture's shutdown budget, and the words find the same fact.
    mode: SearchMode = "hybrid" if memory.embedding.ready else "lexical"
    # The index as it stands: this session's own fresh entries are steps of
    # the same conversation, never what a new entry corrects (recall/trust.py),
    # and indexing them first re-read the day's file after every capture
    # (147 ms a capture once a day held 2,000 entries).
    request = SearchRequest(
        query[:QUERY_CHARS], k + LOOKAHEAD, kind=kind, mode=mode, sync=False, catch_up=False
    )
    try:
        hits = search(memory, request).result.hits
    except Exception as exc:
        log.info("no earlier memories offered: the search failed: %s", exc)
        return []
    out: list[Earlier] = []
    for hit in hits:
        if (
            hit.kind not in ("journal", "topic")
            or hit.superseded_by
            or not one_fact(hit.content)
            or is_echo(hit.content)
        ):
            continue
        text = _one_line(hit.content)
        if not text:
            continue
        out.append(
            Earlier(
                f"m{len(out) + 1}",
                hit.chunk_hash,
                content_hash_of(hit.content),
                hit.date,
                text,
                hit.content,
            )
        )
        if len(out) == k:
            break
    return out


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
