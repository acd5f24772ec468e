"""The trust benchmark's pure parts: small-store selection, hit records, metrics.

No model and no process here, so the tests can check them directly.

A *record* is one query's answer: the query (set, store, id, category, gold,
superseded / newer entry) and its hits, each kept as ``{"entry", "chunk",
"score"}`` plus whichever of ``band``, ``superseded_by``, ``date`` and
``age_days`` the hit carried (memlane adds them from issue 27 on; absent
before, and every metric here works either way).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coding_store import CodingSet, Query, Session

#: Sizes of the small stores, and how many stores of each size per set.
SMALL_SIZES = (3, 6, 10)
SMALL_STORES_PER_SIZE = 10
SMALL_SEED = 27

#: Optional fields of a search hit kept in the records.
HIT_EXTRAS = ("band", "superseded_by", "date", "age_days")

#: Targets of issue 27 (a share; "max" ones are ceilings).
TARGETS: dict[str, tuple[str, float]] = {
    "newer_first": ("min", 0.90),
    "small_in_answer": ("min", 0.97),
    "small_first": ("min", 0.85),
    "small_empty": ("max", 0.0),
    "pushed": ("max", 0.05),
    "strong": ("max", 0.05),
}


# -- small stores ---------------------------------------------------------------------


@dataclass(frozen=True)
class SmallStore:
    name: str  # e.g. "kelpie-6-03"
    set_name: str
    size: int
    data: CodingSet  # the chosen entries (their sessions and dates kept) and its queries


def changed_entry_ids(data: CodingSet) -> set[str]:
    """Entries that take part in a change (a newer one, or one it replaced)."""
    ids: set[str] = set()
    for q in data.questions:
        if q.superseded or q.newer:
            ids.update(i for i in (q.gold, q.superseded, q.newer) if i)
    return ids


def small_store_pool(data: CodingSet) -> list[str]:
    """Entries a small store draws from: those with a paraphrase question and no change."""
    asked = {q.gold for q in data.questions if q.category == "paraphrase"}
    changed = changed_entry_ids(data)
    return [e.id for e in data.entries if e.id in asked and e.id not in changed]


def subset(data: CodingSet, entry_ids: Iterable[str], project: str) -> CodingSet:
    """``data`` cut down to some entries (sessions and dates kept) and the
    paraphrase questions about them; every unrelated query stays."""
    keep = set(entry_ids)
    sessions: list[Session] = []
    for session in data.sessions:
        entries = tuple(e for e in session.entries if e.id in keep)
        if entries:
            sessions.append(replace(session, entries=entries))
    questions = tuple(q for q in data.questions if q.category == "paraphrase" and q.gold in keep)
    return replace(data, project=project, sessions=tuple(sessions), questions=questions)


def small_stores(
    set_name: str,
    data: CodingSet,
    sizes: Sequence[int] = SMALL_SIZES,
    per_size: int = SMALL_STORES_PER_SIZE,
    seed: int = SMALL_SEED,
) -> list[SmallStore]:
    """Deterministic random selections: ``per_size`` stores of each size."""
    pool = small_store_pool(data)
    stores = []
    for size in sizes:
        rng = random.Random(f"{seed}:{set_name}:{size}")
        for index in range(per_size):
            chosen = rng.sample(pool, size)
            name = f"{set_name}-{size}-{index:02d}"
            stores.append(SmallStore(name, set_name, size, subset(data, chosen, name)))
    return stores


# -- records ---------------------------------------------------------------------------


def hit_record(hit: Mapping[str, Any], entry: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "entry": entry,
        "chunk": hit.get("chunk_hash"),
        "score": float(hit.get("score", 0.0)),
    }
    for key in HIT_EXTRAS:
        if key in hit:
            record[key] = hit[key]
    return record


def query_record(
    set_name: str,
    store: str,
    query: Query,
    hits: Sequence[Mapping[str, Any]],
    entries_of: Callable[[Mapping[str, Any]], list[str]],
) -> dict[str, Any]:
    """One query's answer, every hit mapped to its entry (None when no entry matches)."""
    kept = []
    for hit in hits:
        ids = entries_of(hit)
        kept.append(hit_record(hit, ids[0] if ids else None))
    record: dict[str, Any] = {
        "set": set_name,
        "store": store,
        "id": query.id,
        "text": query.text,
        "category": query.category,
        "kind": "unrelated" if query.gold is None else "question",
        "gold": query.gold,
        "hits": kept,
    }
    if query.superseded:
        record["superseded"] = query.superseded
    if query.newer:
        record["newer"] = query.newer
    return record


def ranked_entries(record: Mapping[str, Any]) -> list[str]:
    """Entry ids of the hits, best first, each once."""
    seen: dict[str, None] = {}
    for hit in record["hits"]:
        if hit["entry"] is not None:
            seen.setdefault(hit["entry"], None)
    return list(seen)


def rank(record: Mapping[str, Any], entry: str | None) -> int | None:
    ranked = ranked_entries(record)
    return ranked.index(entry) + 1 if entry in ranked else None


def first_hit_of(record: Mapping[str, Any], entry: str) -> Mapping[str, Any] | None:
    return next((h for h in record["hits"] if h["entry"] == entry), None)


def field_seen(records: Iterable[Mapping[str, Any]], key: str) -> bool:
    """Whether any hit of these records carries ``key`` (memlane added the field)."""
    return any(key in hit for r in records for hit in r["hits"])


# -- metrics ---------------------------------------------------------------------------


def share(flags: Sequence[bool]) -> float | None:
    return statistics.fmean(float(f) for f in flags) if flags else None


def question_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """hit@1, hit@3, MRR, and how many came back with no hit at all."""
    ranks = [rank(r, r["gold"]) for r in records]
    return {
        "n": len(records),
        "hit@1": share([k == 1 for k in ranks]),
        "hit@3": share([k is not None and k <= 3 for k in ranks]),
        "in_answer": share([k is not None for k in ranks]),
        "mrr": statistics.fmean(1.0 / k if k else 0.0 for k in ranks) if ranks else None,
        "empty": sum(not r["hits"] for r in records),
    }


def changed_metrics(records: Sequence[Mapping[str, Any]], marks_seen: bool) -> dict[str, Any]:
    """Changed facts: the newer entry first / in the top 3; either entry of the pair
    first (what the search itself finds: the ceiling of any rule that only decides
    between the two); the older one above it; the older one, when returned, marked
    ``superseded_by`` (None when no hit of the run carries the field at all)."""
    base = question_metrics(records)
    older_above: list[bool] = []
    older_marked: list[bool] = []
    marked_to_newer: list[bool] = []
    for r in records:
        newer, older = rank(r, r["gold"]), rank(r, r.get("superseded"))
        older_above.append(older is not None and (newer is None or older < newer))
        old_hit = first_hit_of(r, r["superseded"]) if older is not None else None
        if old_hit is not None:
            older_marked.append(bool(old_hit.get("superseded_by")))
            new_hit = first_hit_of(r, r["gold"])
            if new_hit is not None:
                marked_to_newer.append(old_hit.get("superseded_by") == new_hit["chunk"])
    return base | {
        "newer_first": base["hit@1"],
        "newer_top3": base["hit@3"],
        "pair_first": share(
            [1 in (rank(r, r["gold"]), rank(r, r.get("superseded"))) for r in records]
        ),
        "older_returned": share([rank(r, r.get("superseded")) is not None for r in records]),
        "older_above_newer": share(older_above),
        "older_marked": share(older_marked) if marks_seen else None,
        "older_marked_n": len(older_marked),
        "older_marked_to_newer": share(marked_to_newer) if marks_seen else None,
    }


def history_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Questions about the former state: gold is the older entry."""
    base = question_metrics(records)
    newer_above = []
    for r in records:
        old, new = rank(r, r["gold"]), rank(r, r.get("newer"))
        newer_above.append(new is not None and (old is None or new < old))
    return base | {"newer_above_older": share(newer_above)}


def unrelated_metrics(
    records: Sequence[Mapping[str, Any]], floor: float, bands_seen: bool
) -> dict[str, Any]:
    """Queries the store does not answer: answered at all, the top hit pushed into
    the agent's context (score >= floor), the top hit labelled strong (None when
    no hit of the run carries a band), top-score quantiles."""
    tops = [r["hits"][0] for r in records if r["hits"]]
    scores = sorted(h["score"] for h in tops)
    return {
        "n": len(records),
        "answered": share([bool(r["hits"]) for r in records]),
        "pushed": share([bool(r["hits"]) and r["hits"][0]["score"] >= floor for r in records]),
        "strong": share([bool(r["hits"]) and r["hits"][0].get("band") == "strong" for r in records])
        if bands_seen
        else None,
        "top_p50": scores[len(scores) // 2] if scores else None,
        "top_max": scores[-1] if scores else None,
    }


def meets(metric: str, value: float | None) -> bool | None:
    """Whether ``value`` meets the target of ``metric`` (None: no target or no value)."""
    target = TARGETS.get(metric)
    if target is None or value is None:
        return None
    kind, bound = target
    return value >= bound if kind == "min" else value <= bound
