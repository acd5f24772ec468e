"""Coding-memory retrieval quality through the real ``memlane`` command (issue 13).

The set (``coding_memory.json``, written by ``coding_store.py`` as capture
would write it) is a coding agent's distilled memory: short standalone
entries, six per session on unrelated topics; questions that paraphrase one
entry each with little word overlap; queries the store does not answer.

The run: write the store into a temp project with its own ``MEMLANE_HOME``
(offline: the bundled model, its derived int8 copy in the shared cache),
``memlane reindex``, then per system one ``memlane search --batch - --json
-k K`` process fed every query on stdin. Hits map back to entries by their
anchor's ``turn:``, or failing that by source and line.

Metrics per system, overall and per question category: hit@1 (the right
entry first), hit@3, MRR (over the top K); real questions that came back
with no hit; the share of unrelated queries that came back with no hit
(overall and per category); top-score quantiles of both, and per query the
(entry id, or chunk hash when no entry matches, and score) of every hit,
for studying score calibration.

Systems:
  bm25     --mode lexical
  dense    --mode semantic
  rrf      hybrid, MEMLANE_INDEX_FUSION=rrf, k=60 (memsearch's)
  default  hybrid with memlane's default settings
  <fusion>@<alpha>  e.g. convex@0.3 (experiments)

No score floor is passed unless ``--min-score`` is given (then to every
system): each system runs with the command's own default.

    python benchmarks/quality/coding.py [--systems bm25,dense,rrf,default]
        [--k 5] [--min-score X] [--data PATH] [--out FILE] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from coding_store import DATA, CodingSet, Query, load_set, turn_id, write_coding_store  # noqa: E402

DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-coding.json"
DEFAULT_SYSTEMS = "bm25,dense,rrf,default"
TOP_K = 5
CLI = [sys.executable, "-m", "memlane.cli.main"]

_TURN_RE = re.compile(r"turn:(\S+)")
_HEADING_RE = re.compile(r"^#{1,6}\s+\S")
# Settings and redirections of the user's own memlane (and pi-memsearch) that
# must not reach the benchmark's processes.
_FOREIGN_ENV_PREFIXES = ("MEMLANE_", "PI_MEMSEARCH_", "MEMSEARCH_")


# -- systems -----------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    name: str
    args: tuple[str, ...]
    env: dict[str, str]


def parse_system(name: str) -> System:
    if name == "bm25":
        return System(name, ("--mode", "lexical"), {})
    if name == "dense":
        return System(name, ("--mode", "semantic"), {})
    if name == "rrf":
        return System(name, (), {"MEMLANE_INDEX_FUSION": "rrf", "MEMLANE_INDEX_RRF_K": "60"})
    if name == "default":
        return System(name, (), {})
    if "@" in name:
        fusion, alpha = name.split("@", 1)
        return System(name, (), {"MEMLANE_INDEX_FUSION": fusion, "MEMLANE_INDEX_ALPHA": alpha})
    raise SystemExit(f"unknown system {name!r}: use bm25, dense, rrf, default or FUSION@ALPHA")


# -- mapping hits to entries -----------------------------------------------------------


class EntryLocator:
    """Which entry a search hit is: by its anchor's turn, else by source and line."""

    def __init__(self, data: CodingSet, store: Path) -> None:
        self._by_turn = {turn_id(e.id): e.id for e in data.entries}
        # resolved source path -> [(first line, last line, entry id)] of each entry
        self._spans: dict[str, list[tuple[int, int, str]]] = {}
        for path in sorted(store.glob("*.md")):
            self._spans[str(path.resolve())] = self._entry_spans(path)

    def _entry_spans(self, path: Path) -> list[tuple[int, int, str]]:
        lines = path.read_text(encoding="utf-8").splitlines()
        spans: list[tuple[int, int, str]] = []
        open_span: tuple[int, str] | None = None
        for number, line in enumerate(lines, start=1):
            if not _HEADING_RE.match(line):
                continue
            if open_span is not None:
                spans.append((open_span[0], number - 1, open_span[1]))
                open_span = None
            if line.startswith("### ") and number < len(lines):
                turns = [t for t in _TURN_RE.findall(lines[number]) if t in self._by_turn]
                if turns:
                    open_span = (number, self._by_turn[turns[0]])
        if open_span is not None:
            spans.append((open_span[0], len(lines), open_span[1]))
        return spans

    def entries_of(self, hit: Mapping[str, Any]) -> list[str]:
        """Entry ids of one hit, in order (a hit holding several anchors has several)."""
        found = [
            self._by_turn[t]
            for t in _TURN_RE.findall(str(hit.get("content", "")))
            if t in self._by_turn
        ]
        if found:
            return list(dict.fromkeys(found))
        source = str(Path(str(hit.get("source", ""))).resolve())
        line = int(hit.get("start_line", 0))
        return [eid for first, last, eid in self._spans.get(source, []) if first <= line <= last]

    def ranked(self, hits: Sequence[Mapping[str, Any]]) -> list[str]:
        """Entry ids of the hits, best first, each once."""
        seen: dict[str, None] = {}
        for hit in hits:
            for entry_id in self.entries_of(hit):
                seen.setdefault(entry_id, None)
        return list(seen)

    def labelled(self, hits: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
        """(entry id, or the chunk hash when no entry matches; score) of each hit."""
        out = []
        for hit in hits:
            ids = self.entries_of(hit)
            out.append((ids[0] if ids else str(hit.get("chunk_hash")), float(hit["score"])))
        return out


# -- the command -------------------------------------------------------------------------


def isolated_env(home: Path, now: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every memlane process of the run gets.

    The user's memlane settings are dropped; the home is the run's own; the
    derived int8 model stays in one shared cache (built once, then reused);
    the sessions layer never reads the user's agent transcripts; and this
    checkout's code is the one that runs.
    """
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if not k.startswith(_FOREIGN_ENV_PREFIXES)}
    env[CACHE_DIR_ENV] = base.get(CACHE_DIR_ENV) or str(cache_dir())
    env["MEMLANE_HOME"] = str(home)
    env["MEMLANE_NOW"] = now
    env["PI_CODING_AGENT_DIR"] = str(home / "pi-agent")
    env["CLAUDE_CONFIG_DIR"] = str(home / "claude")
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    src = str(REPO / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, base.get("PYTHONPATH", "")) if p)
    return env


def run_cli(
    args: Sequence[str], env: Mapping[str, str], stdin: str | None = None
) -> tuple[str, float]:
    """stdout of ``memlane ARGS`` and its wall time; a failure stops the run with its stderr."""
    started = time.perf_counter()
    proc = subprocess.run(
        [*CLI, *args], env=dict(env), input=stdin, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"memlane {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout, wall


def parse_batch(stdout: str, queries: Sequence[str]) -> list[list[dict[str, Any]]]:
    """The hits of each query from ``search --batch --json`` output (one line per query)."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    if [line.get("query") for line in lines] != list(queries):
        raise SystemExit(
            f"search --batch answered {len(lines)} lines for {len(queries)} queries, "
            "not one per query in order"
        )
    return [list(line.get("hits", [])) for line in lines]


# -- scoring --------------------------------------------------------------------------------


def rank_of(ranked: Sequence[str], gold: str) -> int | None:
    """1-based rank of ``gold`` among the ranked entries, None when absent."""
    return ranked.index(gold) + 1 if gold in ranked else None


def question_row(rank: int | None) -> dict[str, float]:
    return {
        "hit@1": float(rank == 1),
        "hit@3": float(rank is not None and rank <= 3),
        "mrr": 1.0 / rank if rank else 0.0,
    }


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"min": ordered[0], "p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "max": ordered[-1]}


def score_system(
    data: CodingSet, locator: EntryLocator, hits: Sequence[Sequence[dict[str, Any]]]
) -> dict[str, Any]:
    """Metrics and per-query records of one system; ``hits`` follows questions, then unrelated."""
    queries: list[Query] = [*data.questions, *data.unrelated]
    records = []
    rows: dict[str, list[dict[str, float]]] = {}
    real_top: list[float] = []
    unrelated_top: list[float] = []
    empty_real = 0
    silent: dict[str, list[bool]] = {}
    for query, query_hits in zip(queries, hits, strict=True):
        record: dict[str, Any] = {
            "id": query.id,
            "text": query.text,
            "category": query.category,
            "hits": locator.labelled(query_hits),
        }
        top = float(query_hits[0]["score"]) if query_hits else None
        if query.gold is not None:
            rank = rank_of(locator.ranked(query_hits), query.gold)
            record.update(kind="question", gold=query.gold, rank=rank)
            rows.setdefault(query.category, []).append(question_row(rank))
            empty_real += not query_hits
            if top is not None:
                real_top.append(top)
        else:
            record["kind"] = "unrelated"
            silent.setdefault(query.category, []).append(not query_hits)
            if top is not None:
                unrelated_top.append(top)
        records.append(record)
    every_row = [row for group in rows.values() for row in group]
    every_silent = [s for group in silent.values() for s in group]
    return {
        "overall": {key: _mean([r[key] for r in every_row]) for key in ("hit@1", "hit@3", "mrr")},
        "by_category": {
            cat: {key: _mean([r[key] for r in group]) for key in ("hit@1", "hit@3", "mrr")}
            | {"questions": len(group)}
            for cat, group in sorted(rows.items())
        },
        "questions": len(every_row),
        "questions_with_no_hit": empty_real,
        "unrelated": len(every_silent),
        "unrelated_no_hit_share": _mean([float(s) for s in every_silent]),
        "unrelated_no_hit_by_category": {
            cat: _mean([float(s) for s in group]) for cat, group in sorted(silent.items())
        },
        "top_score": {"questions": _quantiles(real_top), "unrelated": _quantiles(unrelated_top)},
        "queries": records,
    }


# -- output ------------------------------------------------------------------------------------


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _share(value: float, total: int) -> str:
    return f"{value:.2f} ({round(value * total)}/{total})"


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def summary_tables(results: Mapping[str, Mapping[str, Any]]) -> str:
    overall = []
    for name, r in results.items():
        n, u = r["questions"], r["unrelated"]
        tops = r["top_score"]
        overall.append(
            [
                name,
                _share(r["overall"]["hit@1"], n),
                _share(r["overall"]["hit@3"], n),
                f"{r['overall']['mrr']:.3f}",
                _share(r["unrelated_no_hit_share"], u),
                f"{r['questions_with_no_hit']}/{n}",
                _score(tops["questions"].get("p10")),
                _score(tops["questions"].get("p50")),
                _score(tops["unrelated"].get("p50")),
                _score(tops["unrelated"].get("max")),
            ]
        )
    parts = [
        markdown_table(
            [
                "system",
                "right entry first",
                "in top 3",
                "MRR",
                "unrelated with no hit",
                "questions with no hit",
                "top score q p10",
                "q p50",
                "unrelated p50",
                "unrelated max",
            ],
            overall,
        )
    ]
    categories = sorted({c for r in results.values() for c in r["by_category"]})
    per_cat = []
    for name, r in results.items():
        row = [name]
        for cat in categories:
            values = r["by_category"].get(cat)
            row.append(
                f"{values['hit@1']:.2f} / {values['hit@3']:.2f} (n={values['questions']})"
                if values
                else "—"
            )
        per_cat.append(row)
    parts.append(markdown_table(["hit@1 / hit@3", *categories], per_cat))
    silent_cats = sorted({c for r in results.values() for c in r["unrelated_no_hit_by_category"]})
    silent_rows = [
        [
            name,
            *(f"{r['unrelated_no_hit_by_category'].get(c, float('nan')):.2f}" for c in silent_cats),
        ]
        for name, r in results.items()
    ]
    parts.append(markdown_table(["unrelated with no hit", *silent_cats], silent_rows))
    return "\n\n".join(parts)


# -- run -----------------------------------------------------------------------------------------


def run(
    data: CodingSet,
    systems: Sequence[System],
    root: Path,
    k: int,
    min_score: str | None,
) -> dict[str, Any]:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    # "Now" is the morning after the last session, whatever today is.
    last = max(s.start for s in data.sessions)
    now = last.replace(hour=9, minute=0, second=0) + timedelta(days=1)
    env = isolated_env(home, now.isoformat())
    project = root / data.project
    store = write_coding_store(data, project, env)
    locator = EntryLocator(data, store)
    stdout, reindex_s = run_cli(["-C", str(project), "reindex", "--json"], env)
    report = json.loads(stdout)
    texts = [q.text for q in (*data.questions, *data.unrelated)]
    extra = ["--min-score", min_score] if min_score is not None else []
    results: dict[str, Any] = {}
    timings: dict[str, float] = {"reindex_s": reindex_s}
    for system in systems:
        args = ["-C", str(project), "search", "--batch", "-", "--json", "-k", str(k)]
        out, wall = run_cli([*args, *system.args, *extra], {**env, **system.env}, "\n".join(texts))
        timings[f"{system.name}_batch_s"] = wall
        results[system.name] = score_system(data, locator, parse_batch(out, texts))
        print(f"{system.name}: {len(texts)} queries in {wall:.1f} s", file=sys.stderr)
    return {
        "store": {
            "sessions": len(data.sessions),
            "entries": len(data.entries),
            "days": len(list(store.glob("*.md"))),
            "chunks": report.get("total_chunks"),
        },
        "timings": timings,
        "results": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS)
    parser.add_argument("--k", type=int, default=TOP_K, help="hits per query (-k)")
    parser.add_argument(
        "--min-score", default=None, help="pass --min-score to every system (default: none)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="build the store and home here and keep them"
    )
    args = parser.parse_args(argv)
    data = load_set(args.data)
    systems = [parse_system(s.strip()) for s in args.systems.split(",") if s.strip()]
    started = time.perf_counter()
    if args.workdir is not None:
        # The store is appended to, as capture does: a used workdir would double it.
        if args.workdir.exists() and any(args.workdir.iterdir()):
            raise SystemExit(f"--workdir {args.workdir} is not empty; give a new directory")
        args.workdir.mkdir(parents=True, exist_ok=True)
        outcome = run(data, systems, args.workdir.resolve(), args.k, args.min_score)
    else:
        with tempfile.TemporaryDirectory(prefix="memlane-coding-") as tmp:
            outcome = run(data, systems, Path(tmp), args.k, args.min_score)
    store = outcome["store"]
    print(
        f"\nCoding memory: {store['entries']} entries in {store['sessions']} sessions over "
        f"{store['days']} days ({store['chunks']} chunks), {len(data.questions)} questions, "
        f"{len(data.unrelated)} unrelated queries, k={args.k}\n"
    )
    print(summary_tables(outcome["results"]))
    payload = {
        "data": str(args.data),
        "top_k": args.k,
        "min_score": args.min_score,
        "systems": {s.name: {"args": list(s.args), "settings": s.env} for s in systems},
        **outcome,
        "wall_s": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({payload['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
