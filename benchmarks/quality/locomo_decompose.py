"""Which leg's evidence LoCoMo loses inside distractors (issue 32).

``locomo_scale.py`` measures how much recall the default search loses when a
conversation's store also holds 100,000 distractor messages. This script
says where the loss is. For every question it records the default search's
evidence (``relevance.Evidence``: each candidate's cosine, coverage and
bm25, and the store's mean cosine) in the conversation's store alone, then
again after the distractors are indexed into the same store, and ranks the
big store's question again with one leg's evidence taken from the small
store:

- **lexical alone-store**: the dense leg's evidence as the big store gives
  it (distractors crowding its candidates, the store's lower chance
  cosine), the lexical leg's as the store alone gives it (the same words
  weighed by the conversation's own statistics);
- **dense alone-store**: the other way round.

A candidate of the borrowed leg keeps its cosine from the store it came
from: the vectors and the query's vector are the same in both stores, so
its cosine is too. Each ranking goes through ``relevance.evidence_ranking``,
the default fusion itself, so "big" here equals locomo_scale.py's default
inside the distractors.

    python benchmarks/quality/locomo_decompose.py [--distractors 100000 | --quick]
        [--conversations conv-26,conv-30] [--out FILE]

Writes benchmarks/results/quality-locomo-decompose.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from locomo import DEFAULT_DATA, TOP_K, prepare_conversation, ranked_turns, score_question  # noqa: E402
from locomo_scale import (  # noqa: E402
    DEFAULT_DISTRACTORS,
    QUICK_DISTRACTORS,
    Recipe,
    fill_cache,
    index_distractors,
    speakers,
    write_distractor_files,
)

from _common import print_table  # noqa: E402

DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-locomo-decompose.json"
#: The rankings compared, in the order reported.
VARIANTS = ("alone", "inside", "inside, lexical alone-store", "inside, dense alone-store")


@contextmanager
def recording() -> Iterator[list[Any]]:
    """Every ``relevance.evidence_ranking`` call's evidence while open, in order.

    It wraps the module's function (the SQLite index calls it through the
    module) and restores it on the way out; the ranking itself is untouched.
    """
    from memlane.index.legs import relevance

    seen: list[Any] = []
    original = relevance.evidence_ranking

    def observed(evidence: Any, mode: Any, scale: Any = None) -> Any:
        seen.append(evidence)
        return original(evidence, mode, scale)

    relevance.evidence_ranking = observed
    try:
        yield seen
    finally:
        relevance.evidence_ranking = original


def mixed(dense_from: Any, lexical_from: Any) -> Any:
    """One question's evidence with the dense leg's from one store and the
    lexical leg's from the other. A lexical candidate the dense store did
    not return keeps its cosine from its own store (same vectors, same query
    vector: the same cosine)."""
    from memlane.index.legs.relevance import Evidence

    cosine = dict(dense_from.cosine)
    for rowid in lexical_from.coverage:
        if rowid not in cosine and rowid in lexical_from.cosine:
            cosine[rowid] = lexical_from.cosine[rowid]
    return Evidence(
        cosine,
        dict(lexical_from.coverage),
        dense_from.mean_cosine,
        dense_from.rows,
        dict(lexical_from.bm25),
    )


@dataclass(frozen=True)
class Asked:
    """One question's gold turns and its evidence in both stores."""

    gold: tuple[str, ...]
    alone: Any
    inside: Any


def recall_at_10(evidence: Any, gold: Sequence[str], turn_of: Callable[[int], str]) -> float:
    """r@10 of the default fusion's ranking of ``evidence`` (row ids -> turns)."""
    from memlane.index.legs.relevance import evidence_ranking

    ranked = [turn_of(rowid) for rowid, _ in evidence_ranking(evidence, "hybrid")[:TOP_K]]
    return score_question(list(dict.fromkeys(ranked)), gold)["r@10"]


def rankings(asked: Sequence[Asked], turn_of: Callable[[int], str]) -> dict[str, float]:
    """Each variant's r@10 summed over ``asked``."""
    totals = dict.fromkeys(VARIANTS, 0.0)
    for q in asked:
        totals["alone"] += recall_at_10(q.alone, q.gold, turn_of)
        totals["inside"] += recall_at_10(q.inside, q.gold, turn_of)
        lexical = mixed(dense_from=q.inside, lexical_from=q.alone)
        totals["inside, lexical alone-store"] += recall_at_10(lexical, q.gold, turn_of)
        dense = mixed(dense_from=q.alone, lexical_from=q.inside)
        totals["inside, dense alone-store"] += recall_at_10(dense, q.gold, turn_of)
    return totals


def turns_by_row(index_path: Path) -> dict[int, str]:
    """Each chunk's row id -> the first turn id its text holds ("?" for none)."""
    conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, content FROM chunks").fetchall()
    finally:
        conn.close()
    return {int(rowid): (ranked_turns([content]) or ["?"])[0] for rowid, content in rows}


def ask_all(mem: Any, questions: Sequence[Any]) -> list[Any]:
    """The default search's evidence for each question (k = 20, as locomo.py asks)."""
    out = []
    with recording() as seen:
        for q in questions:
            seen.clear()
            mem.search(q.text, TOP_K, mode="hybrid", sync=False)
            if not seen:
                raise SystemExit(f"the default fusion was not used for {q.text!r}")
            out.append(seen[-1])
    return out


def decompose(conv: dict[str, Any], root: Path, recipe: Recipe) -> dict[str, Any]:
    """One conversation: evidence alone, the distractors indexed, evidence inside."""
    from locomo_scale import open_memory

    prepared = prepare_conversation(conv, root, notes=False)
    busy = {p.stem for p in prepared.store.glob("*.md")}
    with open_memory(prepared.project) as mem:
        mem.sync()
        alone = ask_all(mem, prepared.questions)
        paths = write_distractor_files(prepared.store, recipe, busy)
        index_distractors(mem, prepared.store, paths)
        inside = ask_all(mem, prepared.questions)
        index_path = Path(mem.index.path)
    turn_of = turns_by_row(index_path).__getitem__
    asked = [
        Asked(tuple(q.gold), a, b)
        for q, a, b in zip(prepared.questions, alone, inside, strict=True)
    ]
    return {"sample_id": prepared.sample, "questions": len(asked), **rankings(asked, turn_of)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--distractors", type=int, default=DEFAULT_DISTRACTORS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DISTRACTORS:,} distractors")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--conversations", default="", help="comma-separated sample ids")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    n = QUICK_DISTRACTORS if args.quick else args.distractors
    if n < 1:
        raise SystemExit("--distractors must be at least 1")
    if not args.data.is_file():
        raise SystemExit(f"no LoCoMo data at {args.data}; pass --data PATH")
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    os.environ.setdefault(CACHE_DIR_ENV, str(cache_dir()))
    started = time.perf_counter()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    recipe = Recipe(n, args.seed, tuple(speakers(data)))
    wanted = {s for s in args.conversations.split(",") if s}
    runs = []
    with tempfile.TemporaryDirectory(prefix="memlane-locomo-decompose-") as tmp:
        fill_cache(recipe, Path(tmp))
        for conv in data:
            if not wanted or conv["sample_id"] in wanted:
                runs.append(decompose(conv, Path(tmp) / "stores", recipe))
                print(f"{runs[-1]['sample_id']}: done", file=sys.stderr)
    questions = sum(run["questions"] for run in runs)
    overall = {v: round(sum(run[v] for run in runs) / max(questions, 1), 4) for v in VARIANTS}
    print_table(
        f"LoCoMo dev, default search: r@10 alone, inside {n:,} distractors, and inside with "
        "one leg's evidence from the store alone",
        [
            {
                "ranking": v,
                "r@10": f"{overall[v]:.3f}",
                "Δ": f"{overall[v] - overall['alone']:+.3f}",
            }
            for v in VARIANTS
        ],
    )
    payload = {
        "data": str(args.data),
        "distractors": n,
        "seed": args.seed,
        "questions": questions,
        "overall_r@10": overall,
        "conversations": runs,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({payload['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
