"""Phases 1 and 2 of a dream: ``orient`` reads the topic files, ``MEMORY.md`` and the
journal entries since the last dream; ``gather`` points out duplicates, related entries
and entries that say they replace another."""

from __future__ import annotations

import difflib
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError, StoreError
from memlane.core.supersede import superseded_hashes
from memlane.core.types import content_hash_of
from memlane.engine.topics.dream.errors import _bad_file
from memlane.engine.topics.dream.meta import _parse_time, read_meta
from memlane.engine.topics.dream.recovery import recover_interrupted_dream
from memlane.store import safe_paths
from memlane.store import topics as T

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

#: Journal text (entries since the last dream) sent to the LLM.
JOURNAL_BUDGET_CHARS = 12_000

#: Titles at least this similar (difflib ratio, normalised) are duplicates.
TITLE_SIMILARITY = 0.85
#: Contents at least this similar are duplicates.
CONTENT_SIMILARITY = 0.9
#: Index neighbours asked per entry, and entries searched at most.
NEIGHBOURS_K = 4
MAX_SEARCHED_ENTRIES = 200
MAX_SIGNALS = 60
#: Index neighbours must share this many content words to be called related.
MIN_SHARED_WORDS = 2
_STOPWORDS = frozenset(
    (
        "that",
        "this",
        "with",
        "from",
        "have",
        "were",
        "when",
        "what",
        "which",
        "there",
        "their",
        "then",
        "than",
        "they",
        "them",
        "will",
        "would",
        "should",
        "could",
        "about",
        "after",
        "before",
        "into",
        "over",
        "under",
        "also",
        "only",
        "just",
        "some",
        "uses",
        "used",
        "using",
        "user",
        "agent",
    )
)
#: Only this much of a title or content is compared for near-duplicates.
COMPARED_CHARS = 600

_DAILY_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_TIME_HEADING_RE = re.compile(r"^###[ \t]+([01]\d|2[0-3]):([0-5]\d)[ \t]*$")
_HEADING_RE = re.compile(r"^#{1,3}[ \t]")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)


# --- 1. orient ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicState:
    slug: str
    path: Path
    text: str
    parsed: T.TopicFile
    info: T.TopicInfo


@dataclass(frozen=True)
class JournalEntry:
    day: str
    time: str
    source: str
    text: str


@dataclass
class Orientation:
    store: Path
    topics: dict[str, TopicState]
    index_text: str
    journal: list[JournalEntry]
    journal_truncated: bool
    last_dream_at: str | None


def _read_daily(store: Path, path: Path) -> str:
    # Through safe_paths: a linked daily file must never reach the LLM.
    try:
        return safe_paths.read_bytes(store, path).decode("utf-8", errors="replace")
    except (OSError, StoreError):
        return ""


def journal_entries(
    store: Path, since: datetime | None, budget: int
) -> tuple[list[JournalEntry], bool]:
    """``### HH:MM`` entries of the daily files after *since*, newest first
    within *budget* characters, returned oldest first; and whether any were
    left out. Daily files are opened read-only."""
    days: list[tuple[str, Path]] = []
    if store.is_dir():
        for path in store.iterdir():
            match = _DAILY_RE.match(path.name)
            if match and path.is_file() and not path.is_symlink():
                days.append((match.group(1), path))
    days.sort(reverse=True)
    since_local = since.astimezone() if since is not None else None
    picked: list[JournalEntry] = []
    used = 0
    truncated = False
    for day, path in days:
        if since_local is not None and day < since_local.date().isoformat():
            break
        entries = _split_entries(day, path.name, _read_daily(store, path))
        for entry in reversed(entries):
            if since_local is not None:
                at = datetime.fromisoformat(f"{entry.day}T{entry.time}").astimezone()
                if at < since_local.replace(second=0, microsecond=0):
                    continue
            cost = len(entry.text) + 20
            if used + cost > budget:
                truncated = True
                break
            picked.append(entry)
            used += cost
        if truncated:
            break
    picked.reverse()
    return picked, truncated


def _split_entries(day: str, source: str, text: str) -> list[JournalEntry]:
    out: list[JournalEntry] = []
    time: str | None = None
    lines: list[str] = []

    def close() -> None:
        body = _COMMENT_RE.sub("", "\n".join(lines)).strip()
        if time is not None and body:
            out.append(JournalEntry(day, time, source, body))

    for line in text.splitlines():
        match = _TIME_HEADING_RE.match(line)
        if match:
            close()
            time, lines = f"{match.group(1)}:{match.group(2)}", []
        elif _HEADING_RE.match(line):
            close()
            time, lines = None, []
        else:
            lines.append(line)
    close()
    return out


def orient(store: Path, *, journal_budget: int = JOURNAL_BUDGET_CHARS) -> Orientation:
    """Phase 1: what is there to consolidate (after settling an interrupted apply)."""
    recover_interrupted_dream(store)
    topics: dict[str, TopicState] = {}
    for slug, path in T.topic_files(store):
        text = T.read_text_strict(path)
        parsed = T.TopicFile.parse(text)
        topics[slug] = TopicState(slug, path, text, parsed, T.topic_info(slug, path, parsed))
    meta = read_meta(store)
    journal, truncated = journal_entries(store, _parse_time(meta.last_dream_at), journal_budget)
    return Orientation(
        store=store,
        topics=topics,
        index_text=T.read_text_strict(T.memory_index_path(store)),
        journal=journal,
        journal_truncated=truncated,
        last_dream_at=meta.last_dream_at,
    )


# --- 2. gather signal -----------------------------------------------------------------------


@dataclass(frozen=True)
class Signal:
    kind: str  # "duplicate" | "related" | "outdated"
    a: tuple[str, str]  # (slug, title)
    b: tuple[str, str]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "a": {"topic": self.a[0], "title": self.a[1]},
            "b": {"topic": self.b[0], "title": self.b[1]},
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Any) -> Signal:
        if not isinstance(data, dict) or set(data) != {"kind", "a", "b", "reason"}:
            raise _bad_file("a signal is not {kind, a, b, reason}")
        ends = []
        for side in (data["a"], data["b"]):
            if (
                not isinstance(side, dict)
                or set(side) != {"topic", "title"}
                or not all(isinstance(v, str) for v in side.values())
            ):
                raise _bad_file("a signal's ends must be {topic, title}")
            ends.append((side["topic"], side["title"]))
        if data["kind"] not in ("duplicate", "related", "outdated") or not isinstance(
            data["reason"], str
        ):
            raise _bad_file("a signal has an unknown kind or no reason")
        return cls(data["kind"], ends[0], ends[1], data["reason"])


def normalise(text: str) -> str:
    """Lower case, accents folded, punctuation and runs of spaces gone."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", folded.lower()).split())


def _content_words(text: str) -> set[str]:
    return {w for w in normalise(text).split() if len(w) >= 4 and w not in _STOPWORDS}


def _similar(a: str, b: str, threshold: float) -> float:
    """difflib's ratio when it reaches *threshold*, else 0. The cheap upper
    bounds go first: every pair of entries is compared."""
    if not a or not b:
        return 0.0
    matcher = difflib.SequenceMatcher(None, a[:COMPARED_CHARS], b[:COMPARED_CHARS], autojunk=False)
    if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
        return 0.0
    ratio = matcher.ratio()
    return ratio if ratio >= threshold else 0.0


def gather(orientation: Orientation, mem: ProjectMemory | None = None) -> list[Signal]:
    """Phase 2: duplicate candidates by normalised text, related entries by
    the index. The LLM judges both; these only point it at what to check."""
    entries = [
        (slug, entry.title, normalise(entry.title), normalise(entry.body))
        for slug, state in orientation.topics.items()
        for entry in state.parsed.entries
    ]
    signals: list[Signal] = []
    paired: set[frozenset[tuple[str, str]]] = set()

    def add(kind: str, a: tuple[str, str], b: tuple[str, str], reason: str) -> None:
        key = frozenset((a, b))
        if a != b and key not in paired and len(signals) < MAX_SIGNALS:
            paired.add(key)
            signals.append(Signal(kind, a, b, reason))

    _outdated(orientation, add)
    for i, (slug_a, title_a, nt_a, nb_a) in enumerate(entries):
        if len(signals) >= MAX_SIGNALS:
            break
        for slug_b, title_b, nt_b, nb_b in entries[i + 1 :]:
            title_ratio = _similar(nt_a, nt_b, TITLE_SIMILARITY)
            if nt_a and nt_a == nt_b:
                add("duplicate", (slug_a, title_a), (slug_b, title_b), "same title")
            elif nb_a and nb_a == nb_b:
                add("duplicate", (slug_a, title_a), (slug_b, title_b), "same content")
            elif title_ratio:
                add(
                    "duplicate",
                    (slug_a, title_a),
                    (slug_b, title_b),
                    f"near-identical titles ({title_ratio:.2f})",
                )
            elif _similar(nb_a, nb_b, CONTENT_SIMILARITY):
                add("duplicate", (slug_a, title_a), (slug_b, title_b), "near-identical content")
    if mem is not None:
        _index_neighbours(orientation, mem, add)
    return signals


def _outdated(
    orientation: Orientation,
    add: Callable[[str, tuple[str, str], tuple[str, str], str], None],
) -> None:
    """Pairs an entry's ``supersedes`` marker names (extraction writes them,
    core/supersede.py): the older entry and the one that replaces it. A dream
    resolves them as any contradiction, by rewriting the topic, so it writes
    no marker of its own."""
    # An entry's chunk, and so its content hash, is its block stripped
    # (store/chunker.py) when it is one chunk, as a topic entry is.
    by_hash = {
        content_hash_of(entry.text.strip()): (slug, entry.title)
        for slug, state in orientation.topics.items()
        for entry in state.parsed.entries
    }
    for slug, state in orientation.topics.items():
        for entry in state.parsed.entries:
            for old in superseded_hashes(entry.body):
                if old in by_hash:
                    add(
                        "outdated",
                        by_hash[old],
                        (slug, entry.title),
                        "the second says it replaces the first: keep its fact, drop the old one",
                    )


def _index_neighbours(
    orientation: Orientation,
    mem: ProjectMemory,
    add: Callable[[str, tuple[str, str], tuple[str, str], str], None],
) -> None:
    by_source = {os.path.realpath(state.path): state for state in orientation.topics.values()}
    words = {
        (state.slug, entry.title): _content_words(f"{entry.title} {entry.body}")
        for state in orientation.topics.values()
        for entry in state.parsed.entries
    }
    searched = 0
    for state in orientation.topics.values():
        for entry in state.parsed.entries:
            if searched >= MAX_SEARCHED_ENTRIES:
                return
            searched += 1
            query = f"{entry.title} {entry.body[:200]}"
            try:
                # min_score 0: the shared-word test below decides, not relevance.
                hits = mem.search(
                    query, NEIGHBOURS_K + 2, kind="topic", sync=False, min_score=0.0
                ).hits
            except MemlaneError:
                return  # no index: the text comparison alone still runs
            for hit in hits:
                other = by_source.get(os.path.realpath(hit.source))
                if other is None:
                    continue
                found = T.entry_at_line(other.parsed, hit.start_line)
                if found is None:
                    continue
                # A small store makes every entry everyone's neighbour; two
                # shared words is what "the same subject" minimally looks like.
                shared = words[(state.slug, entry.title)] & words.get(
                    (other.slug, found.title), set()
                )
                if len(shared) < MIN_SHARED_WORDS:
                    continue
                add(
                    "related",
                    (state.slug, entry.title),
                    (other.slug, found.title),
                    "neighbours in the index: same subject? check for a duplicate or a "
                    "contradiction",
                )
