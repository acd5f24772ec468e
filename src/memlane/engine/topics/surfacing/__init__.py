"""Auto-surfacing: the topic files relevant to a prompt, injected whole (issue 7).

pi-memory asks a side-query LLM to pick topic files on every prompt. memlane
picks them by retrieval, which fits the auto-context deadline (300 ms) and
needs no LLM:

* **chunks**: ``Memory.search(kind="topic", sync=False)`` over the indexed
  topic entries; a slug's chunk score is its best hit's score relative to
  the best topic hit, so on its own it cannot tell "nothing is relevant"
  from "this is the best of a bad lot";
* **cards**: each topic's ``name: description`` line plus its entry titles,
  cached per file (mtime, size) with its embedding. Against a card the
  prompt gets two *absolute* signals: the cosine of the two embeddings, and
  the IDF-weighted share of the prompt's words the card holds (words cut
  and stemmed by the index's own tokenizer, ``terms``).

``score = CHUNK_WEIGHT * chunk + CARD_WEIGHT * card`` where ``card`` is the
better of the rescaled cosine and the lexical match. A topic is surfaced
when its score reaches ``SCORE_FLOOR`` **and** its absolute card evidence
reaches ``EVIDENCE_FLOOR``, so a prompt that merely shares a common word
with some entry injects nothing. The figures are calibrated on
``tests/engine/test_surfacing.py``'s store (see ``calibrate`` there).

With ``auto_surfacing.model`` (or ``topics.model``) set and an LLM given,
the candidates that cleared the floor are re-ranked by a side query bounded
by the same deadline; a late, failed or unusable answer leaves the
retrieval order in place.

``TopicSurfacer`` keeps the session's state: the card cache and
``already_injected``. Only the thread that actually hands the text to the
host should mark topics as injected (``mark_injected``): a search that
missed its deadline must not make a topic count as seen.

From ``Session``: ``surfacer.warm(m)`` once on the search worker (it owns
a ``Memory.fork()``, the index handle is thread-bound), then per prompt
``reply = worker.submit(lambda m: surfacer.surface(m, prompt,
deadline=t0 + cap_s))`` and ``reply.get(timeout=cap_s)`` on the prompt's
thread; on a result with ``text``, ``surfacer.mark_injected(result.slugs)``.

One module per job: ``terms``, ``cards``, ``signals`` (chunk, cosine,
lexical), ``surfacer`` (state and selection), ``rerank`` (the side query),
``render`` (the injected message), ``snapshot`` (MEMORY.md for the stable
snapshot). This package only re-exports them.
"""

from memlane.engine.topics.surfacing.cards import Card
from memlane.engine.topics.surfacing.render import cut_bytes
from memlane.engine.topics.surfacing.rerank import SYSTEM_PROMPT, parse_rerank, rerank_prompt
from memlane.engine.topics.surfacing.signals import SEARCH_K
from memlane.engine.topics.surfacing.snapshot import memory_index_block
from memlane.engine.topics.surfacing.surfacer import (
    CARD_WEIGHT,
    CHUNK_WEIGHT,
    COSINE_ONE,
    COSINE_ZERO,
    EMBED_PER_PROMPT,
    EVIDENCE_FLOOR,
    QUERY_CHARS,
    SCORE_FLOOR,
    Candidate,
    Surfaced,
    TopicSurfacer,
)
from memlane.engine.topics.surfacing.terms import terms

__all__ = [
    "CARD_WEIGHT",
    "CHUNK_WEIGHT",
    "COSINE_ONE",
    "COSINE_ZERO",
    "EMBED_PER_PROMPT",
    "EVIDENCE_FLOOR",
    "QUERY_CHARS",
    "SCORE_FLOOR",
    "SEARCH_K",
    "SYSTEM_PROMPT",
    "Candidate",
    "Card",
    "Surfaced",
    "TopicSurfacer",
    "cut_bytes",
    "memory_index_block",
    "parse_rerank",
    "rerank_prompt",
    "terms",
]
