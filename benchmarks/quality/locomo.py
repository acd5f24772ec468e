"""LoCoMo retrieval quality through memlane's real engine (issue 3).

For each conversation of the development split: write it as a memlane
store (``locomo_store.py``: one daily file per session date, one anchored
entry per turn, or per observation fact with ``--notes``), index it with
``Memory.sync`` in a temp project with its own ``MEMLANE_HOME``, and run
every question through ``Memory.search`` (k = 20, the index synced once, as
``memlane search --batch`` does). Hits map back to LoCoMo ``dia_id``s via
their anchors' ``turn:``; a hit holding several anchors yields all of them,
in order.

Metrics (protocol: ../shared/data/README.md), per category and overall:
recall_any@k (any gold turn in the top k), frac@k (fraction of gold turns in
the top k), k in {1, 5, 10, 20}; session hit@1 / hit@5 (a session's rank is
its best turn's rank); p50/p95 search latency (query embedding included).

Systems, all on the same stores and index in one run:
  bm25     mode lexical
  dense    mode semantic
  rrf      hybrid, fusion rrf k=60 (memsearch's)
  default  hybrid with memlane's default settings
  <fusion>@<alpha>  e.g. convex@0.3, wrrf@0.6 (experiments)

    python benchmarks/quality/locomo.py [--systems bm25,dense,rrf,default]
        [--notes] [--data PATH] [--conversations conv-26,conv-30] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from locomo_store import session_numbers, write_conversation_store  # noqa: E402

from _common import percentile, print_table  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo-dev.json"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-locomo.json"
KS = (1, 5, 10, 20)
TOP_K = 20
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_SYSTEMS = "bm25,dense,rrf,default"
CALIBRATION_TOP_K = 3  # AUTO_CONTEXT_TOP_K
CALIBRATION_FOREIGN = 100  # foreign questions per conversation
CALIBRATION_FLOORS = tuple(round(0.05 * i, 2) for i in range(4, 20))

_TURN_RE = re.compile(r"turn:(\S+)")
_DIA_RE = re.compile(r"^D:?(\d+):0*(\d+)$")


# -- data ------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    gold: tuple[str, ...]  # dia_ids


def repair_evidence(raw: Iterable[str], known: set[str]) -> list[str]:
    """Split on ';' and spaces, repair the unambiguous ("D:11:26", "D30:05"),
    drop what is not a turn of this conversation."""
    out: list[str] = []
    for item in raw:
        for piece in re.split(r"[;\s]+", str(item)):
            match = _DIA_RE.match(piece.strip())
            if not match:
                continue
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return out


def turn_ids(conv: dict[str, Any]) -> set[str]:
    conversation = conv["conversation"]
    return {
        str(turn["dia_id"])
        for n in session_numbers(conversation)
        for turn in conversation[f"session_{n}"]
    }


def questions_of(conv: dict[str, Any]) -> tuple[list[Question], int]:
    """Questions with usable evidence, and how many were skipped."""
    known = turn_ids(conv)
    kept: list[Question] = []
    skipped = 0
    for qa in conv["qa"]:
        gold = repair_evidence(qa.get("evidence") or [], known)
        text = " ".join(str(qa.get("question", "")).split())
        if not gold or not text:
            skipped += 1
            continue
        kept.append(Question(text, int(qa["category"]), tuple(gold)))
    return kept, skipped


def ranked_turns(contents: Sequence[str]) -> list[str]:
    """dia_ids of the hits, best first; several anchors in one hit keep their order."""
    seen: dict[str, None] = {}
    for content in contents:
        for dia_id in _TURN_RE.findall(content):
            seen.setdefault(dia_id, None)
    return list(seen)


def session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def score_question(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    gold_set = set(gold)
    row: dict[str, float] = {}
    for k in KS:
        top = set(ranked[:k])
        found = len(gold_set & top)
        row[f"r@{k}"] = float(found > 0)
        row[f"frac@{k}"] = found / len(gold_set)
    sessions = list(dict.fromkeys(session_of(d) for d in ranked))
    gold_sessions = {session_of(d) for d in gold}
    row["s@1"] = float(bool(set(sessions[:1]) & gold_sessions))
    row["s@5"] = float(bool(set(sessions[:5]) & gold_sessions))
    return row


def aggregate(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}


# -- systems -----------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    name: str
    mode: str
    env: dict[str, str]


def parse_system(name: str) -> System:
    if name == "bm25":
        return System(name, "lexical", {})
    if name == "dense":
        return System(name, "semantic", {})
    if name == "rrf":
        return System(name, "hybrid", {"MEMLANE_INDEX_FUSION": "rrf", "MEMLANE_INDEX_RRF_K": "60"})
    if name == "default":
        return System(name, "hybrid", {})
    if "@" in name:
        fusion, alpha = name.split("@", 1)
        return System(
            name, "hybrid", {"MEMLANE_INDEX_FUSION": fusion, "MEMLANE_INDEX_ALPHA": alpha}
        )
    raise SystemExit(f"unknown system {name!r}: use bm25, dense, rrf, default or FUSION@ALPHA")


# -- run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """One conversation written as a store in its own project and MEMLANE_HOME."""

    sample: str
    project: Path
    store: Path
    stored: set[str]  # dia_ids the store holds
    questions: list[Question]
    skipped: int


def prepare_conversation(conv: dict[str, Any], root: Path, notes: bool) -> Prepared:
    """Write ``conv`` as a store under ``root/<sample>`` and point MEMLANE_HOME there."""
    sample = str(conv["sample_id"])
    home = root / sample / "home"
    home.mkdir(parents=True)
    os.environ["MEMLANE_HOME"] = str(home)
    project = root / sample / "project"
    store = write_conversation_store(conv, project, notes=notes)
    stored = {t for f in store.glob("*.md") for t in _TURN_RE.findall(f.read_text("utf-8"))}
    questions, skipped = questions_of(conv)
    return Prepared(sample, project, store, stored, questions, skipped)


def ask(
    mem: Any,
    questions: Sequence[Question],
    mode: str,
    stored: set[str],
    foreign: Sequence[str] = (),
) -> dict[str, Any]:
    """Every question through ``mem.search`` (k = 20, no sync): rows per
    category, latencies, the ranked dia_ids, the top hits' scores, the
    foreign questions' best."""
    rows: list[tuple[int, dict[str, float]]] = []
    ranked_lists: list[list[str]] = []
    latencies: list[float] = []
    top_scores: list[list[tuple[float, bool]]] = []
    for q in questions:
        t0 = time.perf_counter()
        result = mem.search(q.text, TOP_K, mode=mode, sync=False)
        latencies.append((time.perf_counter() - t0) * 1000)
        ranked = ranked_turns([h.content for h in result.hits])
        row = score_question(ranked, q.gold)
        ranked_lists.append(ranked[:TOP_K])
        # Notes: a question whose evidence turns got no observation
        # cannot be answered at turn level by any retriever.
        row["answerable"] = float(bool(stored & set(q.gold)))
        rows.append((q.category, row))
        top_scores.append(
            [
                (h.score, bool(set(ranked_turns([h.content])) & set(q.gold)))
                for h in result.hits[:CALIBRATION_TOP_K]
            ]
        )
    foreign_best = []
    for text in foreign:
        hits = mem.search(text, CALIBRATION_TOP_K, mode=mode, sync=False).hits
        foreign_best.append(hits[0].score if hits else 0.0)
    return {
        "rows": rows,
        "latency_ms": latencies,
        "ranked": ranked_lists,
        "top": top_scores,
        "foreign_best": foreign_best,
    }


def run_conversation(
    conv: dict[str, Any],
    systems: Sequence[System],
    root: Path,
    notes: bool,
    foreign: Sequence[str] = (),
) -> dict[str, Any]:
    """Index ``conv`` and run its questions through every system.

    ``foreign`` (questions of another conversation, about other people) are
    run too, only to see what scores a store with nothing relevant gives.
    """
    from memlane.core.config import load_config
    from memlane.core.scope import resolve_scope
    from memlane.engine.project import Memory

    prepared = prepare_conversation(conv, root, notes)
    scope = resolve_scope(prepared.project)
    out: dict[str, Any] = {
        "sample_id": prepared.sample,
        "questions": len(prepared.questions),
        "skipped": prepared.skipped,
    }
    per_system: dict[str, Any] = {}
    for i, system in enumerate(systems):
        config = load_config(None, env=system.env)
        with Memory(scope, config) as mem:
            start = time.perf_counter()
            report = mem.sync()
            index_s = time.perf_counter() - start
            if i == 0:
                out["index_s"] = index_s
                out["chunks"] = report.total_chunks
            per_system[system.name] = ask(
                mem, prepared.questions, system.mode, prepared.stored, foreign
            )
    out["systems"] = per_system
    return out


def calibration(runs: Sequence[dict[str, Any]], name: str) -> list[dict[str, float]]:
    """What a score floor means for the top-3 hits (auto-context's view).

    precision: share of the hits at or above the floor that are gold turns;
    answered: share of questions with at least one hit at or above it;
    gold_kept: share of questions whose top-3 gold hit survives the floor;
    foreign: share of another conversation's questions (nothing relevant
    stored) that still get a hit at or above it.
    """
    tops = [t for run in runs for t in run["systems"][name]["top"]]
    foreign = [b for run in runs for b in run["systems"][name]["foreign_best"]]
    table = []
    for floor in CALIBRATION_FLOORS:
        kept = [(s, g) for top in tops for s, g in top if s >= floor]
        table.append(
            {
                "floor": floor,
                "precision": statistics.fmean(g for _, g in kept) if kept else float("nan"),
                "answered": statistics.fmean(any(s >= floor for s, _ in t) for t in tops),
                "gold_kept": statistics.fmean(any(s >= floor and g for s, g in t) for t in tops),
                "foreign": statistics.fmean(b >= floor for b in foreign)
                if foreign
                else float("nan"),
            }
        )
    return table


def summarise(runs: Sequence[dict[str, Any]], systems: Sequence[System]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for system in systems:
        rows = [row for run in runs for row in run["systems"][system.name]["rows"]]
        latencies = [ms for run in runs for ms in run["systems"][system.name]["latency_ms"]]
        by_cat = {
            CATEGORIES.get(cat, str(cat)): aggregate([r for c, r in rows if c == cat])
            for cat in sorted({c for c, _ in rows})
        }
        answerable = [r for _, r in rows if r["answerable"]]
        summary[system.name] = {
            "overall": aggregate([r for _, r in rows]),
            "answerable": {**aggregate(answerable), "questions": len(answerable)},
            "by_category": by_cat,
            "questions": len(rows),
            "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
            "score_floor_calibration": calibration(runs, system.name),
        }
    return summary


def print_summary(summary: dict[str, Any], notes: bool, calibrate: bool = False) -> None:
    label = "observation notes" if notes else "turns"
    rows = []
    for name, data in summary.items():
        o = data["overall"]
        rows.append(
            {
                "system": name,
                **{f"r@{k}": o[f"r@{k}"] for k in KS},
                "frac@10": o["frac@10"],
                "s@1": o["s@1"],
                "s@5": o["s@5"],
                "p50 ms": data["latency_ms"]["p50"],
                "p95 ms": data["latency_ms"]["p95"],
            }
        )
    print_table(f"LoCoMo dev, documents = {label}, overall", rows)
    if notes:
        answerable = [
            {
                "system": name,
                "questions": int(data["answerable"].get("questions", 0)),
                **{f"r@{k}": data["answerable"].get(f"r@{k}", 0.0) for k in KS},
                "s@1": data["answerable"].get("s@1", 0.0),
            }
            for name, data in summary.items()
        ]
        print_table("questions whose evidence turn has a note (the reachable ones)", answerable)
    for metric in ("r@10", "s@1"):
        cat_rows = []
        for name, data in summary.items():
            row: dict[str, Any] = {"system": name}
            for cat, values in data["by_category"].items():
                row[cat] = values[metric]
            cat_rows.append(row)
        print_table(f"{metric} per category", cat_rows)
    if calibrate:
        for name, data in summary.items():
            print_table(
                f"score floor calibration, {name} (top-{CALIBRATION_TOP_K} hits)",
                data["score_floor_calibration"],
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS)
    parser.add_argument("--notes", action="store_true", help="index observation facts, not turns")
    parser.add_argument("--conversations", default="", help="comma-separated sample ids")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--calibrate", action="store_true", help="print what each score floor keeps (top-3 hits)"
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"no LoCoMo data at {args.data}; pass --data PATH")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    wanted = {s for s in args.conversations.split(",") if s}
    convs = [c for c in data if not wanted or c["sample_id"] in wanted]
    systems = [parse_system(s.strip()) for s in args.systems.split(",") if s.strip()]
    # Every conversation gets its own MEMLANE_HOME; the derived int8 model
    # stays in one shared cache (it is built once, then reused).
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    os.environ.setdefault(CACHE_DIR_ENV, str(cache_dir()))
    started = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory(prefix="memlane-locomo-") as tmp:
        for conv in convs:
            foreign: list[str] = []
            if args.calibrate and len(data) > 1:
                other = data[(data.index(conv) + 1) % len(data)]
                foreign = [q.text for q in questions_of(other)[0]][:CALIBRATION_FOREIGN]
            run = run_conversation(conv, systems, Path(tmp), args.notes, foreign)
            print(
                f"{run['sample_id']}: {run['chunks']} chunks indexed in {run['index_s']:.1f} s, "
                f"{run['questions']} questions ({run['skipped']} skipped)",
                file=sys.stderr,
            )
            runs.append(run)
    summary = summarise(runs, systems)
    print_summary(summary, args.notes, args.calibrate)
    out = args.out or (
        DEFAULT_OUT.with_name("quality-locomo-notes.json") if args.notes else DEFAULT_OUT
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "data": str(args.data),
        "documents": "notes" if args.notes else "turns",
        "top_k": TOP_K,
        "conversations": [{k: v for k, v in run.items() if k != "systems"} for run in runs],
        "systems": {s.name: {"mode": s.mode, "settings": s.env} for s in systems},
        "summary": summary,
        "wall_s": time.perf_counter() - started,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out} ({payload['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
