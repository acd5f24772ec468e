"""Fit and check the calibration behind memlane's search scores (ADR 0010).

    python benchmarks/quality/calibrate.py [--data locomo-dev.json] [--out FILE]

For the three quality sets (LoCoMo turns, LoCoMo observations as notes, the
coding-memory set) it builds each store with memlane's own writers, indexes
it with the bundled model (``Memory.sync``), and for every question and
every unrelated query (the coding set's own; for LoCoMo, questions of
another conversation) gathers the evidence the default fusion sees:
cosines of the dense candidates (and of every lexical candidate), the
collection's mean cosine, coverage of the lexical candidates. Then it

1. ranks each query with ``index/legs/relevance.py`` itself (and by each leg
   alone) and reports hit@1/3/10 and session hit@1;
2. fits, per search mode, the logistic curve of "the store answers this
   query" on (best cosine - mean cosine, best cosine, top coverage), real
   questions against unrelated queries, each class of each set weighted
   equally, and prints the fitted constants for ``relevance.CALIBRATIONS``;
3. reports, with the constants in the code, what floors keep and silence,
   and how often the top hit is the gold one per score band.

Results go to ``benchmarks/results/calibration.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))

from coding_store import load_set, turn_id, write_coding_store  # noqa: E402
from locomo import questions_of  # noqa: E402
from locomo_store import write_conversation_store  # noqa: E402

from memlane.index.sqlite.notes_search import candidate_count  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo-dev.json"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "calibration.json"
CANDIDATES = candidate_count(5)  # the candidates a search for the default k = 5 takes
FOREIGN_PER_STORE = 100
FLOORS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
BANDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)
_TURN_RE = re.compile(r"turn:(\S+)")
_SESSION_RE = re.compile(r"^D(\d+):")


@dataclass
class QueryEvidence:
    """What the default fusion sees for one query, plus the gold labels."""

    text: str
    gold: frozenset[str]  # anchor turn ids; empty for an unrelated query
    category: str
    cosine: dict[int, float]
    coverage: dict[int, float]
    mean_cosine: float
    turn_of: dict[int, str]
    rows: int = 0
    bm25: dict[int, float] = field(default_factory=dict)

    @property
    def evidence(self) -> Any:
        from memlane.index.legs.relevance import Evidence

        return Evidence(
            dict(self.cosine), dict(self.coverage), self.mean_cosine, self.rows, dict(self.bm25)
        )

    @property
    def margin(self) -> float:
        from memlane.index.legs.relevance import chance_cosine

        top = max(self.cosine.values(), default=0.0)
        return top - chance_cosine(top, self.mean_cosine, self.rows)

    @property
    def related(self) -> bool:
        return bool(self.gold)


def _vectors(conn: sqlite3.Connection) -> tuple[list[int], npt.NDArray[np.float32], list[str]]:
    rows = conn.execute(
        "SELECT id, vector, content FROM chunks WHERE vector IS NOT NULL ORDER BY id"
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    matrix = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows]).astype(np.float32)
    turns = []
    for r in rows:
        found = _TURN_RE.search(r[2])
        turns.append(found.group(1) if found else "")
    return ids, matrix, turns


def collect(
    project: Path, queries: Sequence[tuple[str, frozenset[str], str]]
) -> list[QueryEvidence]:
    """Index ``project``'s store and gather every query's evidence."""
    from memlane.core.config import load_config
    from memlane.core.scope import resolve_scope
    from memlane.engine.project import Memory
    from memlane.index.legs import lexical

    config = load_config(None, env={})
    with Memory(resolve_scope(project), config) as mem:
        mem.sync()
        embedder = mem.embedding.embedder
        assert embedder is not None, "the bundled model is needed"
        qvecs = [
            np.asarray(embedder.embed_query(q[0]), dtype=np.float32).reshape(-1) for q in queries
        ]
        path = mem.internals.index_path
    conn = sqlite3.connect(str(path))
    try:
        lexical.install(conn)
        ids, matrix, turns = _vectors(conn)
        turn_of = dict(zip(ids, turns, strict=True))
        leg = lexical.LexicalLeg()
        out = []
        for (text, gold, category), qvec in zip(queries, qvecs, strict=True):
            scores = matrix @ qvec
            top = np.argsort(-scores, kind="stable")[:CANDIDATES]
            cosine = {ids[i]: float(scores[i]) for i in top}
            ranking = leg.rank(conn, text, CANDIDATES, None, "calibrate")
            coverage = {rowid: ranking.query.evidence(bm25) for rowid, bm25 in ranking.hits}
            position = {rowid: i for i, rowid in enumerate(ids)}
            for rowid in coverage:
                if rowid not in cosine and rowid in position:
                    cosine[rowid] = float(scores[position[rowid]])
            out.append(
                QueryEvidence(
                    text,
                    gold,
                    category,
                    cosine,
                    coverage,
                    float(scores.mean()),
                    turn_of,
                    len(ids),
                    dict(ranking.hits),
                )
            )
        return out
    finally:
        conn.close()


def locomo_set(data: Path, notes: bool, root: Path) -> list[QueryEvidence]:
    conversations = json.loads(data.read_text(encoding="utf-8"))
    out: list[QueryEvidence] = []
    for i, conv in enumerate(conversations):
        home = root / f"{conv['sample_id']}-{notes}"
        os.environ["MEMLANE_HOME"] = str(home / "home")
        project = home / "project"
        write_conversation_store(conv, project, notes=notes)
        questions, _ = questions_of(conv)
        other, _ = questions_of(conversations[(i + 1) % len(conversations)])
        queries = [(q.text, frozenset(q.gold), str(q.category)) for q in questions]
        queries += [(q.text, frozenset(), "foreign") for q in other[:FOREIGN_PER_STORE]]
        out += collect(project, queries)
    return out


def coding_set(root: Path, path: Path | None = None, name: str = "coding") -> list[QueryEvidence]:
    data = load_set() if path is None else load_set(path)
    os.environ["MEMLANE_HOME"] = str(root / name / "home")
    project = root / name / "project"
    write_coding_store(data, project)
    queries = [
        (q.text, frozenset([turn_id(q.gold)]) if q.gold else frozenset(), q.category)
        for q in [*data.questions, *data.unrelated]
    ]
    return collect(project, queries)


# -- ranking -------------------------------------------------------------------------


def ranked(q: QueryEvidence, system: str) -> list[int]:
    from memlane.index.legs.relevance import evidence_ranking

    if system == "bm25":
        return sorted(q.coverage, key=lambda r: (-q.coverage[r], r))
    if system == "dense":
        return sorted(q.cosine, key=lambda r: (-q.cosine[r], r))
    return [rowid for rowid, _ in evidence_ranking(q.evidence, "hybrid")]


def _session(turn: str) -> str:
    found = _SESSION_RE.match(turn)
    return found.group(1) if found else turn


def ranking_metrics(queries: Sequence[QueryEvidence], system: str) -> dict[str, float]:
    rows = [q for q in queries if q.related]
    hit1 = hit3 = hit10 = s1 = 0
    for q in rows:
        turns = [q.turn_of[r] for r in ranked(q, system)]
        hit1 += any(t in q.gold for t in turns[:1])
        hit3 += any(t in q.gold for t in turns[:3])
        hit10 += any(t in q.gold for t in turns[:10])
        s1 += bool(turns) and _session(turns[0]) in {_session(g) for g in q.gold}
    n = max(len(rows), 1)
    return {"hit@1": hit1 / n, "hit@3": hit3 / n, "hit@10": hit10 / n, "session@1": s1 / n}


# -- calibration -----------------------------------------------------------------------

FEATURES: dict[str, Callable[[QueryEvidence], list[float]]] = {
    "hybrid": lambda q: [
        q.margin,
        max(q.cosine.values(), default=0.0),
        max(q.coverage.values(), default=0.0),
    ],
    "semantic": lambda q: [q.margin, max(q.cosine.values(), default=0.0)],
    "lexical": lambda q: [max(q.coverage.values(), default=0.0)],
}


def fit(sets: dict[str, list[QueryEvidence]], mode: str) -> list[float]:
    """Weighted logistic regression (Newton); returns weights then bias."""
    rows, labels, weights = [], [], []
    for queries in sets.values():
        for related in (True, False):
            group = [q for q in queries if q.related == related]
            for q in group:
                rows.append([*FEATURES[mode](q), 1.0])
                labels.append(1.0 if related else 0.0)
                weights.append(1.0 / len(group))
    x, y, w = np.array(rows), np.array(labels), np.array(weights)
    w = w / w.mean()
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ beta)))
        hessian = x.T @ (x * (w * p * (1 - p))[:, None]) + 1e-4 * np.eye(len(beta))
        step = np.linalg.solve(hessian, x.T @ (w * (p - y)) + 1e-4 * beta)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return [round(float(b), 2) for b in beta]


def top_score(q: QueryEvidence) -> float:
    from memlane.index.legs.relevance import evidence_ranking

    ranking = evidence_ranking(q.evidence, "hybrid")
    return ranking[0][1] if ranking else 0.0


def floors(queries: Sequence[QueryEvidence]) -> list[dict[str, float]]:
    tops = [(top_score(q), q.related) for q in queries]
    real = [s for s, r in tops if r]
    unrelated = [s for s, r in tops if not r]
    return [
        {
            "floor": f,
            "real_kept": sum(s >= f for s in real) / max(len(real), 1),
            "unrelated_silenced": sum(s < f for s in unrelated) / max(len(unrelated), 1),
        }
        for f in FLOORS
    ]


def bands(queries: Sequence[QueryEvidence]) -> list[dict[str, float]]:
    """Per band of the top hit's score: how many real questions, and the
    share whose top hit is the gold entry."""
    from memlane.index.legs.relevance import evidence_ranking

    out = []
    rows = []
    for q in queries:
        if not q.related:
            continue
        ranking = evidence_ranking(q.evidence, "hybrid")
        if ranking:
            rowid, score = ranking[0]
            rows.append((score, q.turn_of[rowid] in q.gold))
    for low, high in itertools.pairwise(BANDS):
        inside = [gold for score, gold in rows if low <= score < high]
        out.append(
            {
                "band": f"{low:.1f}-{min(high, 1.0):.1f}",
                "questions": len(inside),
                "top_is_gold": sum(inside) / len(inside) if inside else float("nan"),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    os.environ.setdefault(CACHE_DIR_ENV, str(cache_dir()))
    with tempfile.TemporaryDirectory(prefix="memlane-calibrate-") as tmp:
        root = Path(tmp)
        sets = {
            "locomo-turns": locomo_set(args.data, False, root),
            "locomo-notes": locomo_set(args.data, True, root),
            "coding": coding_set(root),
            # Distilled notes whose decisions change, with near-miss queries
            # (questions of the project's own domain the store does not answer).
            "changed": coding_set(root, HERE / "changed_memory.json", "changed"),
        }
    report: dict[str, Any] = {"sets": {}, "fitted": {}}
    print("| set | system | hit@1 | hit@3 | hit@10 | session@1 |\n|---|---|---|---|---|---|")
    for name, queries in sets.items():
        entry: dict[str, Any] = {"ranking": {}}
        for system in ("bm25", "dense", "default"):
            m = ranking_metrics(queries, system)
            entry["ranking"][system] = m
            print(
                f"| {name} | {system} | {m['hit@1']:.3f} | {m['hit@3']:.3f} | "
                f"{m['hit@10']:.3f} | {m['session@1']:.3f} |"
            )
        report["sets"][name] = entry
    for mode in FEATURES:
        report["fitted"][mode] = fit(sets, mode)
    # The floors and bands below are those of the fitted curves (what the
    # code holds once relevance.CALIBRATIONS is set to them).
    from memlane.index.legs import relevance

    for mode, weights in report["fitted"].items():
        named = dict(zip(["margin", "cosine", "coverage"], weights[:-1], strict=False))
        if mode == "lexical":
            named = {"coverage": weights[0]}
        relevance.CALIBRATIONS[mode] = relevance.QueryCalibration(
            bias=weights[-1],
            margin=named.get("margin", 0.0),
            cosine=named.get("cosine", 0.0),
            coverage=named.get("coverage", 0.0),
        )
    for name, queries in sets.items():
        report["sets"][name]["floors"] = floors(queries)
        report["sets"][name]["bands"] = bands(queries)
    means = [q.mean_cosine for queries in sets.values() for q in queries]
    report["mean_cosine"] = round(float(np.mean(means)), 3)
    print("mean cosine of a query with a collection:", report["mean_cosine"])
    print("\nfitted (feature weights, then bias):", json.dumps(report["fitted"]))
    print("\n| floor | " + " | ".join(f"{n} kept / silenced" for n in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for i, f in enumerate(FLOORS):
        cells = [
            f"{report['sets'][n]['floors'][i]['real_kept']:.2f} / "
            f"{report['sets'][n]['floors'][i]['unrelated_silenced']:.2f}"
            for n in sets
        ]
        print(f"| {f:g} | " + " | ".join(cells) + " |")
    print("\n| top score | " + " | ".join(f"{n} questions (top is gold)" for n in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for i in range(len(BANDS) - 1):
        cells = []
        for n in sets:
            band = report["sets"][n]["bands"][i]
            share = band["top_is_gold"]
            cells.append(f"{band['questions']} ({share:.2f})" if band["questions"] else "0")
        print(
            f"| {report['sets'][next(iter(sets))]['bands'][i]['band']} | "
            + " | ".join(cells)
            + " |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
