"""The search for the few earlier memories a writer is shown (the offer and
the answer: engine/shared/earlier.py).

Capture (distillation) and extraction search the store for what an exchange
is about before they ask their LLM. Nothing offered, or nothing found: the
prompt is exactly what it was before.

Only entries of one fact are offered (``trust.one_fact``): a marker outdates
an entry as a whole, and a session summary of many bullets is at most partly
outdated. An entry already outdated is not offered, nor an echo (an
undistilled digest, a note of questions: ``trust.is_echo``), which states no
fact to correct.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memlane.core.types import Kind, SearchMode, content_hash_of
from memlane.engine.recall.router import search
from memlane.engine.recall.trust import is_echo, one_fact
from memlane.engine.shared.earlier import OFFERED, Earlier, one_line
from memlane.engine.shared.request import SearchRequest

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

log = logging.getLogger(__name__)

#: The search is asked for this many more, as some are not offered.
LOOKAHEAD = 5
#: The query: the start of the exchange.
QUERY_CHARS = 1000


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
        text = one_line(hit.content)
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
