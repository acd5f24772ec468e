"""Whether a proposed learning repeats what the topic files already say.

The same title or the same content (case, spacing and punctuation aside)
anywhere in the topic files, read from disk, so entries written moments ago
and not yet indexed count; or a near duplicate: the entries most like it
(``Memory.search(kind="topic", sync=False)`` plus every entry of the topic it
would go to) compared by embedding cosine (``DUPLICATE_COSINE``) or, without
a model, by word overlap (``DUPLICATE_OVERLAP``).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError
from memlane.engine.topics.proposals import Learning
from memlane.store import topics as store_topics

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory

# Reported as extraction, whose step this is (its log filters and tests name it).
log = logging.getLogger("memlane.engine.topics.extraction")

#: Entries compared with each proposal: the index's nearest ones.
SIMILAR_K = 8
#: A proposal at least this close (cosine, bundled model) to an existing
#: entry is a near duplicate. Calibrated on ``DUPLICATE_PAIRS`` in
#: tests/engine/test_extract.py: 8 restatements of an entry scored
#: 0.75-0.95, 10 related but different facts (same system, other fact)
#: 0.17-0.68.
DUPLICATE_COSINE = 0.72
#: Without a model: the share of the proposal's words an entry holds. Same
#: pairs: restatements 0.42-0.71, different facts 0.00-0.31.
DUPLICATE_OVERLAP = 0.4
#: With a model, word overlap alone still flags a near copy.
COPY_OVERLAP = 0.9


_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Case, accents, punctuation and spacing aside."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(_WORD_RE.findall(folded))


def overlap(candidate: str, existing: str) -> float:
    """The share of *candidate*'s distinct words that *existing* holds."""
    mine = set(normalise(candidate).split())
    if not mine:
        return 0.0
    return len(mine & set(normalise(existing).split())) / len(mine)


@dataclass
class ExistingEntries:
    """Topic entries to compare proposals with."""

    titles: dict[str, str] = field(default_factory=dict)  # normalised title -> slug
    bodies: dict[str, str] = field(default_factory=dict)  # normalised body -> slug
    by_slug: dict[str, list[str]] = field(default_factory=dict)  # slug -> "title\nbody"
    slugs: set[str] = field(default_factory=set)


def existing_entries(memory: ProjectMemory) -> ExistingEntries:
    out = ExistingEntries()
    store = memory.scope.store
    for info in store_topics.list_topics(store):
        out.slugs.add(info.slug)
        try:
            parsed = store_topics.read_topic(store, info.slug)
        except MemlaneError:
            continue
        texts = []
        for entry in parsed.entries:
            out.titles.setdefault(normalise(entry.title), info.slug)
            if entry.body:
                out.bodies.setdefault(normalise(entry.body), info.slug)
            texts.append(f"{entry.title}\n{entry.body}")
        out.by_slug[info.slug] = texts
    return out


def similar_texts(
    memory: ProjectMemory, learning: Learning, existing: ExistingEntries
) -> list[str]:
    """The entries a proposal could repeat: the index's nearest topic chunks
    and every entry of its own topic (possibly written moments ago, not yet
    indexed)."""
    texts = list(existing.by_slug.get(learning.slug, []))
    try:
        # min_score 0: the text overlap decides what is a near duplicate.
        hits = memory.search(
            f"{learning.title}\n{learning.content}",
            SIMILAR_K,
            kind="topic",
            sync=False,
            min_score=0.0,
        ).hits
    except Exception as exc:
        log.info("extraction: similarity search failed: %s", exc)
        hits = []
    texts.extend(hit.content for hit in hits)
    return texts


def strip_heading(text: str) -> str:
    """An entry's text as a proposal is written: "## Title" becomes "Title"."""
    return "\n".join(
        line.lstrip("#").strip() if line.startswith("#") else line for line in text.splitlines()
    )


def near_duplicate(
    memory: ProjectMemory, learning: Learning, texts: list[str]
) -> tuple[str, float] | None:
    """(the closest existing text, its similarity) when *learning* repeats it."""
    if not texts:
        return None
    mine = f"{learning.title}\n{learning.content}"
    best_overlap = max(texts, key=lambda t: overlap(mine, t))
    score = overlap(mine, best_overlap)
    embedder = None
    if memory.config.embedding.provider != "none":
        try:
            embedder = memory.embedder
        except Exception:
            embedder = None
    if embedder is not None:
        try:
            vectors = embedder.embed([mine, *(strip_heading(t) for t in texts)])
            sims = vectors[1:] @ vectors[0]
            at = int(sims.argmax())
            cosine = float(sims[at])
        except Exception as exc:
            log.info("extraction: embedding failed, word overlap only: %s", exc)
        else:
            if cosine >= DUPLICATE_COSINE:
                return texts[at], cosine
            # With a model, word overlap alone flags only near copies: a
            # related fact shares many words with what it is related to.
            return (best_overlap, score) if score >= COPY_OVERLAP else None
    if score >= DUPLICATE_OVERLAP:
        return best_overlap, score
    return None
