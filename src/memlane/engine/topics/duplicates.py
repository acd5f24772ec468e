"""Whether a proposed learning repeats what the topic files already say.

Compared with the topic files as they are on disk when the proposal comes
(re-read for every extraction, so entries written moments ago, and entries a
dream has just merged or rewritten, count whether or not the index has
caught up):

* the same title or the same content (case, spacing and punctuation aside)
  anywhere in the topic files;
* a near duplicate of a *fact*: an entry as a whole, or one sentence of it.
  A dream merges several facts into one entry ("deploys go out Tuesday to
  Thursday; deploys are frozen on Fridays and over the holidays"), and a
  restatement of one of them is close to its sentence, not to the whole
  entry. The candidates are every entry sharing a content word with the
  proposal, the entries of the topic it would go to, and the index's nearest
  topic chunks (``Memory.search(kind="topic", sync=False)``), which finds a
  paraphrase sharing no word.

With an embedding model a fact is repeated when its cosine with the proposal
reaches ``DUPLICATE_COSINE``, or reaches ``RELATED_COSINE`` while the fact
holds ``RELATED_COVERAGE`` of the proposal's content words (stemmed,
core/words.py: the light stem the engine's other word comparisons use); or,
whatever the cosine, when it holds ``COPY_OVERLAP`` of them. Without a model,
coverage alone decides (``DUPLICATE_OVERLAP``).

A proposal that names something its closest entry does not is never its
duplicate, however close: a number when none of the entry's numbers matches
(the pool was 540 s, now 280 s) or when it says that something changed
(``trust.says_something_changed``: "went up from 50 MB to 200 MB"), an
identifier (a path, a host, a snake_case name) or a proper name (a weekday,
a product) the entry lacks. That is a
changed value or one more fact about the same thing: it is added (and a
dream later merges the two).

Measured on ``benchmarks/quality/repeated_facts.json`` (20 restatements, 10
of them of facts a dream merged, and 20 new facts about the same subjects)
by ``benchmarks/quality/dedupe.py``; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlane.core.errors import MemlaneError
from memlane.core.words import FUNCTION_WORDS, light_stem
from memlane.engine.topics.proposals import Learning
from memlane.store import topics as store_topics

if TYPE_CHECKING:
    import numpy as np

    from memlane.embed.base import Embedder
    from memlane.engine.shared.ports import ProjectMemory

# Reported as extraction, whose step this is (its log filters and tests name it).
log = logging.getLogger("memlane.engine.topics.extraction")

#: Entries compared with each proposal: the index's nearest ones.
SIMILAR_K = 8
#: At most this many entries sharing a word with the proposal are compared
#: (the most overlapping first): a curated store holds far fewer.
MAX_COMPARED = 200
#: A proposal at least this close (cosine, bundled model) to a fact is a near
#: duplicate. Calibrated on ``DUPLICATE_PAIRS`` in tests/engine/test_extract.py:
#: 8 restatements of an entry scored 0.75-0.95, 10 related but different
#: facts (same system, other fact) 0.17-0.68.
DUPLICATE_COSINE = 0.72
#: Closer than this, a fact holding ``RELATED_COVERAGE`` of the proposal's
#: content words is repeated too. On the same pairs the different facts that
#: come this close hold at most 0.30 of the words, the restatements 0.45 and
#: more. On the repeated-facts set the least close restatement (of one fact
#: of a merged entry: "deployments are not allowed on Fridays" against
#: "deploys are frozen on Fridays ...") sits at 0.61 with 0.60 of its words,
#: the closest near miss holding as many words at 0.56: the cosine is midway.
RELATED_COSINE = 0.58
RELATED_COVERAGE = 0.45
#: Without a model: the share of the proposal's content words a fact holds.
#: Same pairs: restatements 0.45-0.83, different facts 0.00-0.30.
DUPLICATE_OVERLAP = 0.45
#: With a model, word coverage alone still flags a near copy.
COPY_OVERLAP = 0.9
#: Vectors of entry texts kept between extractions (per model): an entry is
#: embedded once per process until it changes.
VECTOR_CACHE = 4096

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
# Sentences and clauses: a dream joins facts with ". " and "; ".
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_NUMBER_RE = re.compile(r"\d+")
# A token naming something: a path, a host, a snake_case or dotted name, a
# word with digits ("utf8mb4"); its surrounding punctuation aside.
_TOKEN_STRIP = "`'\"()[]{}<>,;:!?*"
_NAME_RE = re.compile(r"\b[A-Z][\w'-]*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*]\s+)?)$")


def normalise(text: str) -> str:
    """Case, accents, punctuation and spacing aside."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(_WORD_RE.findall(folded))


def content_words(text: str) -> frozenset[str]:
    """The words that say what a text is about, light-stemmed."""
    return frozenset(light_stem(w) for w in normalise(text).split() if w not in FUNCTION_WORDS)


def overlap(candidate: str, existing: str) -> float:
    """The share of *candidate*'s content words that *existing* holds."""
    mine = content_words(candidate)
    if not mine:
        return 0.0
    return len(mine & content_words(existing)) / len(mine)


@dataclass
class ExistingEntries:
    """Topic entries to compare proposals with."""

    titles: dict[str, str] = field(default_factory=dict)  # normalised title -> slug
    bodies: dict[str, str] = field(default_factory=dict)  # normalised body -> slug
    by_slug: dict[str, list[str]] = field(default_factory=dict)  # slug -> "title\nbody"
    slugs: set[str] = field(default_factory=set)


def existing_entries(memory: ProjectMemory) -> ExistingEntries:
    """Every topic entry as the files say now."""
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
    """The entries a proposal could repeat: its own topic's, every other one
    sharing a content word with it (from the files: a dream's merged entries
    included), and the index's nearest topic chunks."""
    mine = f"{learning.title}\n{learning.content}"
    texts = list(existing.by_slug.get(learning.slug, []))
    others = [
        (overlap(mine, text), text)
        for slug, entries in existing.by_slug.items()
        if slug != learning.slug
        for text in entries
    ]
    others = sorted((o for o in others if o[0] > 0), key=lambda o: -o[0])[:MAX_COMPARED]
    texts.extend(text for _, text in others)
    try:
        # min_score 0: the comparison decides what is a near duplicate.
        hits = memory.search(mine, SIMILAR_K, kind="topic", sync=False, min_score=0.0).hits
    except Exception as exc:
        log.info("extraction: similarity search failed: %s", exc)
        hits = []
    texts.extend(hit.content for hit in hits)
    return list(dict.fromkeys(texts))


def strip_heading(text: str) -> str:
    """An entry's text as a proposal is written: "## Title" becomes "Title"."""
    return "\n".join(
        line.lstrip("#").strip() if line.startswith("#") else line for line in text.splitlines()
    )


def facts_of(text: str) -> list[str]:
    """An entry as a whole, and each of its sentences, under its title and alone
    (a merged entry's title may name only one of its facts)."""
    plain = strip_heading(text).strip()
    title, _, body = plain.partition("\n")
    parts = [p.strip() for p in _SENTENCE_RE.split(body) if len(p.strip()) > 3]
    if len(parts) < 2:
        return [plain]
    return [plain, *(f"{title}\n{p}" for p in parts), *parts]


def _numbers(text: str) -> set[str]:
    return {str(int(n)) for n in _NUMBER_RE.findall(text)}


def _names(content: str) -> set[str]:
    """Identifiers and proper names in *content* (words opening a sentence aside)."""
    found: set[str] = set()
    for raw in content.split():
        token = raw.strip(_TOKEN_STRIP).rstrip(".")
        inner = token.strip("./~")
        if (len(inner.replace(".", "")) > 3 and any(mark in inner for mark in "_/.@=~")) or (
            any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
        ):
            found.add(token.casefold())
    for match in _NAME_RE.finditer(content):
        if not _SENTENCE_START_RE.search(content[: match.start()]):
            found.update(light_stem(w) for w in normalise(match.group()).split())
    return found


def adds_something(learning: Learning, entry: str) -> str | None:
    """What *learning* names that *entry* does not (a number, an identifier, a
    name), or None: a restatement adds nothing."""
    from memlane.engine.recall.trust import says_something_changed

    theirs = strip_heading(entry).casefold()
    mine_numbers, their_numbers = _numbers(learning.content), _numbers(theirs)
    novel = mine_numbers - their_numbers
    # A number of its own, where the entry's are all other ones or where it
    # says what changed ("went up from 50 MB to 200 MB"); a restatement may
    # give one in other units ("10 minutes" for "600 s") beside the others.
    if novel and (not mine_numbers & their_numbers or says_something_changed(learning.content)):
        return min(novel)
    their_words = {light_stem(w) for w in normalise(theirs).split()}
    for name in sorted(_names(learning.content)):
        if name not in theirs and name not in their_words:
            return name
    return None


_cache_lock = threading.Lock()
_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()


def _embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of *texts*, the ones seen before from the cache."""
    import numpy as np

    model = str(embedder.name)
    with _cache_lock:
        known = {t: _vectors[(model, t)] for t in texts if (model, t) in _vectors}
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        fresh = embedder.embed(missing)
        with _cache_lock:
            for text, vector in zip(missing, fresh, strict=True):
                known[text] = vector
                _vectors[(model, text)] = vector
                _vectors.move_to_end((model, text))
            while len(_vectors) > VECTOR_CACHE:
                _vectors.popitem(last=False)
    return np.stack([known[t] for t in texts])


def near_duplicate(
    memory: ProjectMemory, learning: Learning, texts: list[str]
) -> tuple[str, float] | None:
    """(the existing entry *learning* repeats, how close) or None."""
    mine = f"{learning.title}\n{learning.content}"
    facts = [(text, fact) for text in texts for fact in facts_of(text)]
    if not facts:
        return None
    coverage = [overlap(mine, fact) for _, fact in facts]
    cosines = _cosines(memory, mine, [fact for _, fact in facts])
    found: list[tuple[float, str]] = []
    for n, (text, _) in enumerate(facts):
        if cosines is None:
            repeated = coverage[n] >= DUPLICATE_OVERLAP
            score = coverage[n]
        else:
            cosine = cosines[n]
            repeated = (
                cosine >= DUPLICATE_COSINE
                or (cosine >= RELATED_COSINE and coverage[n] >= RELATED_COVERAGE)
                or coverage[n] >= COPY_OVERLAP
            )
            score = cosine
        if repeated:
            found.append((score, text))
    for score, text in sorted(found, key=lambda f: -f[0]):
        if adds_something(learning, text) is None:
            return text, score
    return None


def _cosines(memory: ProjectMemory, mine: str, facts: list[str]) -> list[float] | None:
    """Each fact's cosine with the proposal; None without a model."""
    if memory.config.embedding.provider == "none":
        return None
    try:
        embedder = memory.embedding.embedder
    except Exception:
        embedder = None
    if embedder is None:
        return None
    try:
        vectors = _embed(embedder, [mine, *facts])
    except Exception as exc:
        log.info("extraction: embedding failed, word overlap only: %s", exc)
        return None
    return [float(v) for v in vectors[1:] @ vectors[0]]
