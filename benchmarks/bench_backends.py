"""The notes index on SQLite and on Milvus Lite, side by side, at 10k and 100k chunks.

Per size, one synthetic store (entry-sized chunks, ``bench_index.make_store``)
is indexed into each backend through memlane's own indexer, configured the
way a user would (``MEMLANE_INDEX_BACKEND``/``MEMLANE_INDEX_URI``), then:

- index: wall time of the indexer writing every chunk (``Indexer.apply``,
  scanning and chunking done before the clock starts). The vectors are
  deterministic random unit vectors (seeded by each text's sha256),
  computed before the clock starts and the same for both backends: this is
  the backend's cost, not the model's;
- warm search: p50/p95 of many hybrid queries (k = 10, BM25 + dense, fused
  and calibrated as ``memlane search`` does) in one long-lived process that
  holds both backends and alternates them query by query (who goes first
  alternates too: the machine's load falls on both alike), the query vectors
  given (random too), ``index.search`` timed alone, with its CPU time and
  its round trips to Milvus (``_roundtrips.py``);
- cold search: wall time of a new ``memlane -C DIR search Q -k 10`` process
  (interpreter start, config, the bundled model for the query, opening the
  index, the search), the backends alternating query by query;
- RSS: peak of the child process (sampled over its process tree) for the
  index run, the warm run and the cold runs; on-disk size after indexing.

Both backends index the same store; each build, the warm run and each cold
search run in a child process (``compare_memsearch.run_child``).

    python benchmarks/bench_backends.py [--quick] [--sizes 10000,100000]
        [--queries N] [--cold-queries N] [--backends sqlite,milvus]

``--quick`` is 1k and 5k chunks. Writes benchmarks/results/bench-backends.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, median, percentile, print_table, write_json
from bench_index import make_store
from compare_memsearch import checked, code_state, last_json, run_child

DIM = 384
TOP_K = 10
CHARS = 350
BACKENDS = ("sqlite", "milvus")
DEFAULT_SIZES = (10_000, 100_000)
QUICK_SIZES = (1_000, 5_000)
BULK_ROWS = 1000
_STOP = ("what did we decide about", "how do we", "why is", "when was")


def unit_vector(text: str) -> np.ndarray:
    """A random unit vector that depends on *text* only (seeded by its sha256)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    row = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    row /= np.linalg.norm(row)
    return row


class PrecomputedVectors:
    """An embedder answering from vectors computed beforehand (``prepare``)."""

    name = "bench-precomputed"
    dimension = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def prepare(self, texts: Iterable[str]) -> None:
        for text in texts:
            if text not in self.vectors:
                self.vectors[text] = unit_vector(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        rows = [self.vectors.get(t) for t in texts]
        return np.stack(
            [unit_vector(t) if v is None else v for t, v in zip(texts, rows, strict=True)]
        )

    def embed_query(self, text: str) -> np.ndarray:
        return unit_vector(text)


def make_queries(store: Path, n: int, seed: int = 5) -> list[str]:
    """Queries drawn from stored text (people search for what they wrote)."""
    rng = random.Random(seed)
    files = sorted(store.glob("*.md"))
    queries: list[str] = []
    while len(queries) < n:
        lines = rng.choice(files).read_text(encoding="utf-8").splitlines()
        body = [ln for ln in lines if ln and not ln.startswith(("#", "<!--"))]
        words = [w.strip("()-.,`:") for w in rng.choice(body).split()]
        words = [w for w in words if len(w) > 2]
        if not words:
            continue
        picked = rng.sample(words, k=min(len(words), rng.randint(2, 6)))
        prefix = rng.choice(_STOP) + " " if rng.random() < 0.3 else ""
        queries.append(prefix + " ".join(picked))
    return queries


# ---------------------------------------------------------------------------
# child processes (the environment names the backend)


def child_build(cfg: dict[str, Any]) -> None:
    from memlane.embed.factory import vector_space
    from memlane.engine.journal.indexer import Indexer, embedding_inputs
    from memlane.engine.project import Memory

    mem = Memory.open(cfg["project"])
    index = mem.index
    # The vector space `memlane search` binds the index to (the bundled model's),
    # so the cold runs search this index instead of re-embedding it.
    index.ensure_model(vector_space(mem.config.embedding), DIM)
    embedder = PrecomputedVectors()
    indexer = Indexer(mem.scope.store, index, mem.embedding.model, lambda: embedder)
    t0 = time.perf_counter()
    plan = indexer.plan()
    plan_s = time.perf_counter() - t0
    for item in plan.pending:
        embedder.prepare(embedding_inputs(item.chunks).values())
    t1 = time.perf_counter()
    report = indexer.apply(plan)
    index_s = time.perf_counter() - t1
    stats = index.stats()
    mem.close()
    out = {"plan_s": plan_s, "index_s": index_s, "report": report.to_json(), "stats": stats}
    print(json.dumps(out, default=str))


def child_bulk(cfg: dict[str, Any]) -> None:
    """Milvus at sizes its per-file writes cannot reach in a sitting: memlane's
    indexer writes the first file (so the collection is memlane's), then the
    other rows go in with plain pymilvus inserts of BULK_ROWS rows each."""
    from pymilvus import MilvusClient

    from memlane.embed.factory import vector_space
    from memlane.engine.journal.indexer import Indexer, embedding_inputs
    from memlane.engine.project import Memory
    from memlane.index.milvus.writes import row_of

    mem = Memory.open(cfg["project"])
    index = mem.index
    index.ensure_model(vector_space(mem.config.embedding), DIM)
    embedder = PrecomputedVectors()
    plan = Indexer(mem.scope.store, index, mem.embedding.model, lambda: embedder).plan()
    first, rest = plan.pending[0], plan.pending[1:]
    inputs = embedding_inputs(first.chunks)
    index.replace_file(first.record, first.chunks, {h: unit_vector(t) for h, t in inputs.items()})
    mem.close()
    rows = []
    for item in rest:
        for chunk, text in zip(item.chunks, embedding_inputs(item.chunks).values(), strict=True):
            rows.append(row_of(chunk, unit_vector(text)))
    time.sleep(1.0)  # past the backend's linger: its client has let the database go
    client = MilvusClient(uri=cfg["uri"])
    t0 = time.perf_counter()
    for start in range(0, len(rows), BULK_ROWS):
        client.insert(cfg["collection"], rows[start : start + BULK_ROWS])
    insert_s = time.perf_counter() - t0
    client.close()
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(cfg["uri"])
    print(json.dumps({"index_s": insert_s, "rows": len(rows) + len(first.chunks)}))


def child_warm(cfg: dict[str, Any]) -> None:
    """Every backend of ``cfg["envs"]`` in this one process, query by query."""
    from _roundtrips import counting, install, take
    from memlane.embed.factory import vector_space
    from memlane.engine.index_backend import hold_milvus_lite
    from memlane.engine.project import Memory

    install()
    hold_milvus_lite(24 * 3600.0)  # as the warm engine holds Lite
    queries: list[str] = cfg["queries"]
    qvecs = [unit_vector(q) for q in queries]
    indexes, mems, out = {}, [], {}
    for backend, env in cfg["envs"].items():
        for key in [k for k in os.environ if k.startswith("MEMLANE_INDEX_")]:
            del os.environ[key]
        os.environ.update(env)  # the configuration is read when the memory opens
        mem = Memory.open(cfg["project"])
        mems.append(mem)
        index = mem.index
        t0 = time.perf_counter()
        index.ensure_model(vector_space(mem.config.embedding), DIM)
        with counting(backend):
            index.search(cfg["warmup"], unit_vector(cfg["warmup"]), TOP_K)
        take(backend)
        indexes[backend] = index
        out[backend] = {"first_s": time.perf_counter() - t0, "latencies_s": [], "cpu_s": []}
        out[backend].update(round_trips=[], empty=0)
    names = list(indexes)
    for i, (q, v) in enumerate(zip(queries, qvecs, strict=True)):
        for backend in names if i % 2 == 0 else list(reversed(names)):
            row = out[backend]
            with counting(backend):
                c0, t0 = time.process_time(), time.perf_counter()
                _, hits = indexes[backend].search(q, v, TOP_K)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            row["latencies_s"].append(wall)
            row["cpu_s"].append(cpu)
            row["round_trips"].append(take(backend))
            row["empty"] += not hits
    for mem in mems:
        mem.close()
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# the parent


def backend_env(base: dict[str, str], root: Path, backend: str) -> dict[str, str]:
    env = dict(base, MEMLANE_HOME=str(root / "home"), MEMLANE_INDEX_BACKEND=backend)
    if backend == "milvus":
        env["MEMLANE_INDEX_URI"] = str(root / "milvus.db")
    return env


def disk_mb(root: Path, backend: str) -> float:
    """What the backend wrote: the SQLite index, or the Lite database and its ledger."""
    total = 0
    for path in root.rglob("*"):
        if not path.is_file() or "memory" in path.parts:
            continue
        milvus = "milvus.db" in path.parts or "milvus-ledger" in path.name
        if milvus == (backend == "milvus"):
            total += path.stat().st_size
    return total / 1e6


def run_size(
    size: int, backends: list[str], root: Path, base_env: dict[str, str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """One store of ``size`` chunks indexed into each backend, then searched
    with the backends alternating query by query."""
    project = root / "proj"
    (project / ".git").mkdir(parents=True)
    store = project / ".memsearch" / "memory"
    make_store(store, size, CHARS)
    envs = {backend: backend_env(base_env, root, backend) for backend in backends}
    me = [sys.executable, __file__]
    cfg_path = root / "cfg.json"
    queries = make_queries(store, args.queries)
    cfg: dict[str, Any] = {"project": str(project), "queries": queries, "warmup": "warm up query"}
    cfg_path.write_text(json.dumps(cfg))
    rows: dict[str, dict[str, Any]] = {}
    bulked: set[str] = set()
    for backend in backends:
        row: dict[str, Any] = {"backend": backend, "chunks": size}
        rows[backend] = row
        env = envs[backend]
        if backend == "milvus" and size > args.milvus_bulk_above:
            from memlane.core.scope import collection_name

            bulk_cfg = dict(cfg, uri=env["MEMLANE_INDEX_URI"], collection=collection_name(project))
            bulk_path = root / "bulk.json"
            bulk_path.write_text(json.dumps(bulk_cfg))
            run = checked(
                run_child([*me, "--child-bulk", str(bulk_path)], env, args.timeout), "bulk"
            )
            built = last_json(run.stdout)
            row["index_mode"] = f"bulk pymilvus insert, {BULK_ROWS} rows a call (not memlane)"
            row["indexed"] = built["rows"]
            bulked.add(backend)
        else:
            run = checked(
                run_child([*me, "--child-build", str(cfg_path)], env, args.timeout), "build"
            )
            built = last_json(run.stdout)
            row["indexed"] = built["report"]["total_chunks"]
        row["index_s"] = built["index_s"]
        row["chunks_per_s"] = size / built["index_s"] if built["index_s"] else 0.0
        row["index_rss_mb"] = run.tree_rss_mb
        row["disk_mb"] = disk_mb(root, backend)

    warm_cfg = dict(
        cfg,
        envs={b: {k: v for k, v in e.items() if k.startswith("MEMLANE_")} for b, e in envs.items()},
    )
    warm_path = root / "warm.json"
    warm_path.write_text(json.dumps(warm_cfg))
    run = checked(run_child([*me, "--child-warm", str(warm_path)], base_env, args.timeout), "warm")
    warm = last_json(run.stdout)
    for backend, row in rows.items():
        got = warm[backend]
        ms = [x * 1000 for x in got["latencies_s"]]
        trips = got["round_trips"]
        row["first_search_s"] = got["first_s"]
        row["warm_p50_ms"] = median(ms)
        row["warm_p95_ms"] = percentile(ms, 95)
        row["cpu_p50_ms"] = median([x * 1000 for x in got["cpu_s"]])
        row["round_trips"] = sum(trips) / len(trips) if trips else 0.0
        row["warm_queries"] = len(ms)
        row["warm_empty"] = got["empty"]
        row["search_rss_mb"] = run.tree_rss_mb  # both backends' process

    memlane = [sys.executable, "-m", "memlane.cli.main", "-C", str(project)]
    colds: dict[str, list[Any]] = {b: [] for b in backends if b not in bulked}
    for b in bulked:  # memlane's ledger never saw these files: a search would index them all
        rows[b]["cold_note"] = "not measured: the collection was bulk-loaded"
    for i, q in enumerate(queries[: args.cold_queries]):
        for backend in list(colds) if i % 2 == 0 else list(reversed(colds)):
            argv = [*memlane, "search", q, "-k", str(TOP_K), "--json"]
            run = checked(run_child(argv, envs[backend], args.timeout), "cold search")
            colds[backend].append(run)
            if json.loads(run.stdout).get("mode") != "hybrid":
                rows[backend]["cold_note"] = "not hybrid: " + run.stdout[:200]
    for backend, runs in colds.items():
        row = rows[backend]
        if runs:
            row["cold_p50_s"] = median([r.wall_s for r in runs])
            row["cold_max_s"] = max(r.wall_s for r in runs)
            row["cold_rss_mb"] = max(r.tree_rss_mb for r in runs)
        # The index run a user would do next: nothing to embed (the index is memlane's own).
        run = checked(
            run_child([*memlane, "index", "--json"], envs[backend], args.timeout), "index check"
        )
        row["reindex_embedded"] = last_json(run.stdout).get("embedded_chunks")
    return list(rows.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k and 5k chunks")
    parser.add_argument("--sizes", default=None, help="comma-separated, default 10000,100000")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--queries", type=int, default=300, help="warm queries per run")
    parser.add_argument("--cold-queries", type=int, default=5, help="cold processes per run")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per child process, s")
    parser.add_argument("--keep", action="store_true", help="keep the temp dirs")
    parser.add_argument("--out", default="bench-backends", help="JSON name under results/")
    parser.add_argument(
        "--milvus-bulk-above",
        type=int,
        default=50_000,
        help="above this many chunks Milvus is bulk-loaded (memlane's per-file writes "
        "take hours there on a 2-core machine)",
    )
    parser.add_argument(
        "--merge", action="store_true", help="keep the other rows of an existing results file"
    )
    parser.add_argument(
        "--commit", default="", help="the commit measured, when run from a copy outside git"
    )
    parser.add_argument("--child-build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-warm", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-bulk", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_build:
        child_build(json.loads(args.child_build.read_text()))
        return
    if args.child_warm:
        child_warm(json.loads(args.child_warm.read_text()))
        return
    if args.child_bulk:
        child_bulk(json.loads(args.child_bulk.read_text()))
        return
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    )
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    from memlane.core.paths import cache_dir

    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "MEMSEARCH_"))}
    base_env["MEMLANE_CACHE_DIR"] = str(cache_dir())  # the int8 model is derived once
    base_env["PYTHONUNBUFFERED"] = "1"
    src = Path(__file__).resolve().parents[1] / "src"
    base_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(src), base_env.get("PYTHONPATH", "")) if p
    )
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for size in sizes:
        root = Path(tempfile.mkdtemp(prefix=f"memlane-bench-{size}-"))
        print(f"{', '.join(backends)} at {size} chunks ...", flush=True)
        t0 = time.perf_counter()
        try:
            got = run_size(size, backends, root, base_env, args)
            for row in got:
                row["commit"] = args.commit or code_state(src.parent)["commit"]
            rows.extend(got)
        except (RuntimeError, subprocess.SubprocessError, ValueError) as exc:
            print(f"  FAILED: {exc}", flush=True)
            rows.extend({"backend": b, "chunks": size, "error": str(exc)[-1500:]} for b in backends)
        finally:
            if args.keep:
                print(f"  kept {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
        print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
        # Written after every size: a long run interrupted keeps what it measured.
        path = report(args, rows, started)
    print_table(
        f"SQLite vs Milvus Lite (hybrid, k={TOP_K}, random unit vectors)",
        [{c: r.get(c, "-") for c in COLUMNS} for r in rows],
    )
    print(f"\nwrote {path} ({time.perf_counter() - started:.0f} s)")


COLUMNS = ["backend", "chunks", "index_s", "chunks_per_s", "index_rss_mb", "disk_mb"]
COLUMNS += ["first_search_s", "warm_p50_ms", "warm_p95_ms", "cpu_p50_ms", "round_trips"]
COLUMNS += ["search_rss_mb"]
COLUMNS += ["cold_p50_s", "cold_rss_mb", "reindex_embedded"]


def report(args: argparse.Namespace, rows: list[dict[str, Any]], started: float) -> Path:
    previous: list[dict[str, Any]] = []
    path = RESULTS_DIR / f"{args.out}.json"
    if args.merge and path.exists():
        ours = {(r["backend"], r["chunks"]) for r in rows}
        previous = [
            r
            for r in json.loads(path.read_text()).get("rows", [])
            if (r["backend"], r["chunks"]) not in ours
        ]
    rows = sorted([*previous, *rows], key=lambda r: (r["chunks"], r["backend"]))
    return write_json(
        args.out,
        {
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "memlane_code": code_state(Path(__file__).resolve().parents[1])
            | ({"commit": args.commit} if args.commit else {}),
            "vectors": "deterministic random unit vectors (sha256-seeded), 384-d",
            "top_k": TOP_K,
            "cpus": os.cpu_count(),
            "load_avg": os.getloadavg(),
            "total_s": time.perf_counter() - started,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
