"""Recall an agent can trust: every hit dated and labelled, the current fact
first, no echoes (docs/search.md, ADR 0028).

What a notes search found is refined here before anyone sees it:

* **Dated.** A journal entry's day and time come from its file name and its
  ``### HH:MM`` heading, a topic entry's from its file's ``updated`` field,
  a message's from its transcript; each hit also says how old it is.
* **No echoes.** A topic file's frontmatter alone is never a hit, and a hit
  on the preamble under it shows the preamble without it. An entry
  that only restates a question (an undistilled ``- user asked: …`` digest,
  a note that only says what the user asked) matches the question's words
  better than any answer does, so it is ranked after every answer and its
  score halved.
* **The current fact first.** Of two entries about the same thing, the newer
  ranks first and the older carries ``superseded_by``. "The same thing" is
  either said (an entry's ``supersedes`` marker, core/supersede.py) or
  inferred: both dated, the newer one close to the older, naming the same
  subject and saying that something changed (``CORRECTION_COSINE``). Nothing is rewritten: it is derived from the
  store at query time, so it holds on any existing store.
* **Labelled.** Each hit's confidence band (core/confidence.py), when the
  scores are calibrated (the default fusion).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlane.core.confidence import band_of
from memlane.core.types import Hit, content_hash_of, embedding_text_of
from memlane.store.anchor import ANCHOR_RE

if TYPE_CHECKING:
    from memlane.core.cosine_scale import CosineScale
    from memlane.core.types import Chunk, Kind
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.index.protocol import NotesIndex

#: Extra candidates a notes search fetches beyond k, so that a newer entry
#: ranked just past the cut can still take its older twin's place, and a
#: dropped frontmatter chunk does not shorten the answer.
LOOKAHEAD = 5
#: In a store with fewer entries than a search fetches, this many of the
#: best are shown even when weak (recall/notes.py says why).
SMALL_STORE_SHOWN = 3
#: When is a newer entry a correction of an older one? Similar entries are
#: often both true ("deploys go out Tuesday to Thursday" and "deploys are
#: frozen on Fridays" sit at cosine 0.66), and notes of fixes say "now"
#: all the time ("the test now takes an injected clock"). So the newer one
#: must (1) say that something changed (``_CHANGE_RE``: replaced, moved,
#: raised, no longer, ...), (2) name the same subject: at least
#: ``SHARED_WORDS`` content words in common ("Celery", "cache TTL"), and
#: (3) be at least ``CORRECTION_COSINE`` close in meaning (on the bundled
#: model's scale). A newer entry that only restates an older one (a capture
#: of an answer given from memory) replaces nothing: the original stays
#: current. On benchmarks/quality/changed_memory.json (1)-(3) hold for 15
#: of its 19 corrections and 1 of the 5,633 other (older, newer) pairs of
#: that set and the coding set (13 and 1 without "now" as a cue, which
#: conversation is full of, so it is not one; ADR 0028).
CORRECTION_COSINE = 0.5
SHARED_WORDS = 2
#: ... at least one of them not among the words of more than this share of
#: the search's candidates (``_common_words``).
COMMON_SHARE = 0.3
COMMON_AMONG = 6
#: ... and (4) answer the query at least this share as well as the older one:
#: a newer entry far down the list is another subject's.
CORRECTION_SCORE_RATIO = 0.3
#: Only an entry of one fact is outdated as a whole: a session summary of
#: many bullets is at most partly outdated, and marking it would hide the
#: rest (and long entries of one project sit close to each other anyway: a
#: tenth of the demo store's pairs are at 0.45 or more). A fact fits in this
#: many characters and lines of text. Two entries of one session are steps
#: of one conversation, not a later correction: only an explicit marker
#: says one replaced the other.
FACT_CHARS = 400
FACT_LINES = 3
#: An echo keeps this share of its score (and ranks after every answer).
ECHO_WEIGHT = 0.5

_CHANGE_RE = re.compile(
    r"\b(replac\w*|switch\w*|moved|moving|ported|migrat\w*|instead of|no longer|"
    r"raised|lowered|increased|decreased|bumped|dropped|deprecated|retired|superseded|"
    r"upgraded|downgraded|reverted|rolled back|anymore|went (up|down)|from \S+ to)\b",
    re.IGNORECASE,
)
_PAST_RE = re.compile(
    r"\b(did|was|were|had|used to|before|previously|originally|formerly|at first|"
    r"back then|ago|earlier|former|old)\b",
    re.IGNORECASE,
)
_SPOKEN_RE = re.compile(r"\b(I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Yy]ou|[Yy]our|[Yy]ours)\b")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{3,}")
_FRONTMATTER_ONLY_RE = re.compile(r"\A\s*---\s*\n.*?\n---\s*\Z", re.DOTALL)
_FRONTMATTER_HEAD_RE = re.compile(r"\A\s*---[ \t]*\n.*?\n---[ \t]*\n", re.DOTALL)
_DIGEST_RE = re.compile(r"^\s*[-*]\s*user asked:", re.IGNORECASE | re.MULTILINE)
_ASKED_LINE_RE = re.compile(r"^\s*[-*]?\s*(the )?user (asked|wanted to know)\b", re.IGNORECASE)
_UPDATED_RE = re.compile(r"^updated:\s*['\"]?(\d{4}-\d{2}-\d{2})", re.MULTILINE)


# -- dates ------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _topic_updated(path: str, mtime_ns: int) -> str | None:
    """A topic file's ``updated`` date (its frontmatter), read once per version."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if not head.startswith("---"):
        return None
    end = head.find("\n---", 3)
    found = _UPDATED_RE.search(head[: end if end > 0 else len(head)])
    return found.group(1) if found else None


def date_of_hit(hit: Hit) -> str | None:
    """When a hit's memory was written: "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM"."""
    if hit.date is not None:
        return hit.date
    from memlane.store.layout import date_of, entry_time_of

    path = Path(hit.source)
    day = date_of(path)
    if day is not None:
        hhmm = entry_time_of(hit.heading)
        return f"{day}T{hhmm}" if hhmm else day
    if path.suffix == ".md":
        try:
            mtime = os.stat(hit.source).st_mtime_ns
        except OSError:
            return None
        return _topic_updated(hit.source, mtime)
    return None


def age_in_days(when: str | None, today: date) -> int | None:
    if when is None:
        return None
    try:
        day = date.fromisoformat(when[:10])
    except ValueError:
        return None
    return max((today - day).days, 0)


def finished(hits: Sequence[Hit], today: date, *, calibrated: bool) -> list[Hit]:
    """Every hit with its date, age and (``calibrated`` scores only) band, in
    one copy of each: this runs for every search."""
    out = []
    for hit in hits:
        when = date_of_hit(hit)
        # A hit shown below the weak floor (a small store's best few, an
        # asked min_score 0) is still only a weak candidate.
        band = (band_of(hit.score) or "weak") if calibrated else None
        out.append(replace(hit, date=when, age_days=age_in_days(when, today), band=band))
    return out


# -- echoes -----------------------------------------------------------------------


# The checks below are pure functions of a chunk's text, asked of the same
# chunks search after search: each answer is kept (texts are hashed once).
@lru_cache(maxsize=8192)
def is_frontmatter_only(content: str) -> bool:
    """The chunk is a topic file's frontmatter block and nothing else."""
    return bool(_FRONTMATTER_ONLY_RE.match(content))


@lru_cache(maxsize=8192)
def is_echo(content: str) -> bool:
    """An entry that only restates a question: an undistilled digest, or a
    note whose every line says what the user asked. (A line that is a
    question is no echo: in a conversation stored turn by turn, questions are
    what was said.)"""
    if _DIGEST_RE.search(content):
        return True
    lines = [
        ln
        for ln in content.splitlines()
        if ln.strip() and not ln.lstrip().startswith(("#", "<!--"))
    ]
    return bool(lines) and all(_ASKED_LINE_RE.search(ln) for ln in lines)


def without_frontmatter(content: str) -> str:
    """A topic file's first chunk without its frontmatter block: the file's
    preamble, what the chunk says (the chunk itself, its hash and lines, are
    the index's, byte-compatible with memsearch's chunking, so it is the hit
    that leaves the block out)."""
    found = _FRONTMATTER_HEAD_RE.match(content)
    return content[found.end() :].lstrip("\n") if found else content


def without_echoes(hits: Sequence[Hit]) -> list[Hit]:
    """Frontmatter dropped (alone, the hit; before a preamble, the block);
    echoes after every answer, at a reduced score."""
    kept = [
        replace(h, content=without_frontmatter(h.content)) if h.content.startswith("---") else h
        for h in hits
        if not is_frontmatter_only(h.content)
    ]
    echo = [is_echo(h.content) for h in kept]
    answers = [h for h, said in zip(kept, echo, strict=True) if not said]
    echoes = [h for h, said in zip(kept, echo, strict=True) if said]
    if not echoes:
        return answers
    ceiling = min((h.score for h in answers), default=1.0)
    return answers + [replace(h, score=min(h.score * ECHO_WEIGHT, ceiling)) for h in echoes]


# -- the current fact first -------------------------------------------------------


@lru_cache(maxsize=8192)
def _content_words(text: str) -> frozenset[str]:
    from memlane.core.words import FUNCTION_WORDS, light_stem

    words = {w.lower().rstrip(".-") for w in _WORD_RE.findall(text)}
    return frozenset(light_stem(w) for w in words if w not in FUNCTION_WORDS)


@lru_cache(maxsize=8192)
def _text_of(content: str) -> str:
    return embedding_text_of(content)


@dataclass(frozen=True)
class _Fact:
    """What the inferred rule needs of a one-fact note, worked out once per search."""

    hit: Hit
    text: str
    session: str | None  # None: written by hand, no conversation behind it
    unit: np.ndarray | None

    @classmethod
    def of(cls, hit: Hit, vector: np.ndarray | None) -> _Fact:
        # The anchor's session, read without building (and checking) an Anchor:
        # this runs for every candidate of every search.
        found = ANCHOR_RE.search(hit.content)
        session = found["session"] if found and found["transcript"] != "none" else None
        unit = None
        if vector is not None:
            norm = float(np.linalg.norm(vector))
            unit = vector / norm if norm > 0 else None
        return cls(hit, _text_of(hit.content), session, unit)


def _correction(
    older: _Fact, newer: _Fact, scale: CosineScale | None, common: Callable[[], frozenset[str]]
) -> float | None:
    """How close the newer note is to the older one it corrects (see
    ``CORRECTION_COSINE``), or None when it corrects nothing; ``common``:
    the words too frequent among the candidates to name a subject, worked
    out only when a pair gets that far."""
    if older.unit is None or newer.unit is None:
        return None
    if older.session is not None and older.session == newer.session:
        return None
    cosine = float(older.unit @ newer.unit)
    if scale is not None:
        cosine = scale.to_reference(cosine)
    if cosine < CORRECTION_COSINE or not _CHANGE_RE.search(newer.text):
        return None
    shared = _content_words(older.text) & _content_words(newer.text)
    return cosine if len(shared) >= SHARED_WORDS and bool(shared - common()) else None


@lru_cache(maxsize=8192)
def one_fact(content: str) -> bool:
    """A short note of one fact, written as a note: memory notes are third
    person ("the team replaced Celery"); a line in the first or second person
    singular is a conversation's turn, whose later turns ("I moved to
    Berlin") are news to remember, not corrections of the earlier ones."""
    text = _text_of(content)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return len(text) <= FACT_CHARS and len(lines) <= FACT_LINES and not _SPOKEN_RE.search(text)


def _newer(a: str | None, b: str | None) -> bool:
    """A memory dated ``a`` was written after one dated ``b`` (both dated)."""
    return a is not None and b is not None and a > b


def _common_words(facts: Iterable[_Fact]) -> frozenset[str]:
    """Words in more than ``COMMON_SHARE`` of the candidate notes: a person's
    name in a store about their life, "invoice" in a billing project. Two
    notes sharing only such words are not about the same thing."""
    notes = [_content_words(f.text) for f in facts]
    if len(notes) < COMMON_AMONG:
        return frozenset()  # too few to tell a store's everyday words
    counts = Counter(word for words in notes for word in words)
    limit = COMMON_SHARE * len(notes)
    return frozenset(word for word, n in counts.items() if n > limit)


def says_something_changed(text: str) -> bool:
    """The text says that something changed: replaced, raised, no longer, from X to Y, ..."""
    return bool(_CHANGE_RE.search(text))


def asks_about_the_past(query: str) -> bool:
    """The question is about what was, not what is ("what did we use before
    Dramatiq?", "when did Caroline move?"): the older memory may be the answer."""
    return bool(_PAST_RE.search(query))


def superseded(
    hits: Sequence[Hit],
    vectors: Mapping[str, np.ndarray],
    said: Mapping[str, Chunk],
    scale: CosineScale | None,
    kind_of: Mapping[str, Kind] | None = None,
    *,
    reorder: bool = True,
) -> list[Hit]:
    """The hits with the current fact first and each outdated one marked.

    ``said``: old content hash -> the chunk whose marker replaces it (it
    joins the hits when the search missed it). ``vectors``: the hits'
    stored vectors, for the inferred rule (module docstring). Without
    ``reorder`` (a question about the past) the outdated ones are only
    marked, in the order the search found them.
    """
    out = list(hits)
    by_hash = {h.chunk_hash: h for h in out}
    when = {h.chunk_hash: date_of_hit(h) for h in out}
    replaced: dict[str, str] = {}  # old chunk hash -> newer chunk hash
    facts = {
        h.chunk_hash: _Fact.of(h, vectors.get(h.chunk_hash))
        for h in out
        if h.kind in ("journal", "topic") and when[h.chunk_hash] and one_fact(h.content)
    }
    common = lru_cache(maxsize=1)(lambda: _common_words(facts.values()))
    for old in out:
        if old.kind not in ("journal", "topic"):
            continue
        marker = said.get(content_hash_of(old.content))
        if marker is not None and marker.chunk_hash != old.chunk_hash:
            if marker.chunk_hash not in by_hash:
                newer = Hit.of(marker, old.score, kind=(kind_of or {}).get(marker.source, old.kind))
                by_hash[newer.chunk_hash] = replace(newer, date=date_of_hit(newer))
            replaced[old.chunk_hash] = marker.chunk_hash
            continue
        fact = facts.get(old.chunk_hash)
        if fact is None:
            continue
        # Of several later notes that pass, the closest in meaning is the
        # correction: a later session often holds the change and an unrelated
        # note of the same area ("MSRV raised to 1.80" and "CI runs nextest
        # now"). A chain (A, then B, then C) still ends at C: B's own
        # correction is followed when the hits are ordered.
        closeness = {
            other.hit.chunk_hash: closeness
            for other in facts.values()
            if _newer(when[other.hit.chunk_hash], when[old.chunk_hash])
            and other.hit.score >= CORRECTION_SCORE_RATIO * old.score
            and (closeness := _correction(fact, other, scale, common)) is not None
        }
        if closeness:
            replaced[old.chunk_hash] = max(closeness, key=lambda h: (closeness[h], when[h] or ""))
    if not replaced:
        return out
    if not reorder:
        return [replace(h, superseded_by=replaced.get(h.chunk_hash)) for h in out]
    return _current_first(out, by_hash, replaced)


def _current_first(hits: list[Hit], by_hash: dict[str, Hit], replaced: dict[str, str]) -> list[Hit]:
    """Each replacing hit takes the best score of what it replaces and comes
    right before it; each replaced one keeps its own score (what it says may
    still answer a question about the past: "when did we use Celery?") and is
    marked."""

    def current(chunk_hash: str) -> str:
        seen = {chunk_hash}
        while chunk_hash in replaced and replaced[chunk_hash] not in seen:
            chunk_hash = replaced[chunk_hash]
            seen.add(chunk_hash)
        return chunk_hash

    scores = {h: by_hash[h].score for h in by_hash}
    for old, _ in replaced.items():
        new = current(old)
        scores[new] = max(scores[old], scores[new])
    ordered = sorted(
        by_hash.values(), key=lambda h: (-scores[h.chunk_hash], h.chunk_hash in replaced)
    )
    return [
        replace(
            h,
            score=scores[h.chunk_hash],
            superseded_by=current(h.chunk_hash) if h.chunk_hash in replaced else None,
        )
        for h in ordered
    ]


def refine_notes(
    hits: Sequence[Hit],
    index: NotesIndex,
    scale: CosineScale | None,
    today: date,
    store: Path,
    query: str = "",
) -> list[Hit]:
    """A notes search's hits without echoes, the current fact first (unless
    ``query`` asks about the past)."""
    from memlane.store.layout import kind_of

    # Undated still: the router dates, ages and bands what it returns.
    out = without_echoes(hits)
    notes = [h for h in out if h.kind in ("journal", "topic")]
    if not notes:
        return out
    said = index.superseders([content_hash_of(h.content) for h in notes])
    facts = [h.chunk_hash for h in notes if one_fact(h.content) and date_of_hit(h)]
    vectors = index.vectors_of(facts) if len(facts) > 1 else {}
    kinds = {c.source: kind_of(Path(c.source), store) for c in said.values()}
    return superseded(out, vectors, said, scale, kinds, reorder=not asks_about_the_past(query))


# -- labels and order -------------------------------------------------------------


def newest_first(hits: Sequence[Hit]) -> list[Hit]:
    """The hits by date, newest first (undated last, in their order)."""
    return sorted(hits, key=lambda h: (h.date is None, _descending(h.date or "")))


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text)


# -- stated corrections -----------------------------------------------------------


def supersedes_markers(memory: ProjectMemory, chunk_hashes: Sequence[str]) -> list[str]:
    """The markers a new entry carries for the memories it replaces: each
    chunk hash (as memory_search shows it) looked up, its content hash named
    (core/supersede.py). An unknown hash is an error, and nothing is written."""
    from memlane.core.errors import NotFoundError
    from memlane.core.supersede import supersedes_marker

    markers = []
    for given in dict.fromkeys(h.strip().lower() for h in chunk_hashes):
        chunk = memory.index.get(given) if re.fullmatch(r"[0-9a-f]{16}", given) else None
        if chunk is None:
            raise NotFoundError(
                f"no memory has the chunk hash {given!r}, so nothing was written",
                "pass a chunk hash from `memlane search` (memory_search); after an edit, "
                "search again for its new hash",
            )
        markers.append(supersedes_marker(content_hash_of(chunk.content)))
    return markers
