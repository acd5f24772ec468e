"""memlane's SQLite backend as a store grows: 10k, 100k and 1M chunks on one machine.

Per size, one project is built in a child process: journal entries (daily
files of entry-sized chunks, ``bench_index.make_store``) indexed through
memlane's own indexer, and past-session messages written into the project's
sessions index (``SessionStore.commit`` in batches, as the sessions layer
writes them). ``--session-share`` of the chunks are session messages (a heavy
user's sessions layer outgrows their notes). Vectors are deterministic random
unit vectors (a fake embedder, computed before the clock starts), so the
model does not dominate; the indexes are bound to the bundled model's vector
space, as ``memlane search`` binds them.

Then, each in a new child process (a user's new ``memlane`` or agent session):

- first load (in the building process): the first dense search after
  indexing, which reads every vector from SQLite once and writes the
  vector files (``<index>.vectors``) later processes map;
- first search: a new process opening both indexes and the first hybrid
  search of each (the vector files mapped, nothing read whole);
- warm search: p50/p95 of ``--queries`` hybrid searches over the notes and
  over the sessions (k = 10, fused and calibrated), the query vector given
  ("index only"), and the same with the query embedded by the bundled int8
  model first ("with query embedding", what a user's search costs);
- peak RSS of that process, and the index files' size on disk.

    python benchmarks/bench_scale.py [--sizes 10000,100000] [--queries 200]
        [--session-share 0.8]

``--sizes 10000,100000,1000000`` adds the million (about 25 minutes and
2 GB of disk on 2 cores). Writes benchmarks/results/bench-scale.json.

Targets (issue 32, idle 2-core machine): warm p50 at 10k <= 5 ms index only,
<= 20 ms with the query embedding; first search <= 150 ms at 100k and
<= 400 ms at 1M; warm p50 with the embedding <= 30 ms at 100k, <= 80 ms at 1M;
RSS <= 1 GB at 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import as_installed, entry_text, percentile, print_table, write_json
from bench_backends import DIM, PrecomputedVectors, make_queries, unit_vector
from bench_index import make_store

TOP_K = 10
CHARS = 350
SESSION_BATCH = 5_000
MESSAGES_PER_SESSION = 300
TARGETS = {
    "warm_p50_index_ms@10k": 5.0,
    "warm_p50_with_embedding_ms@10k": 20.0,
    "first_search_ms@100k": 150.0,
    "first_search_ms@1M": 400.0,
    "warm_p50_with_embedding_ms@100k": 30.0,
    "warm_p50_with_embedding_ms@1M": 80.0,
    "rss_mb@1M": 1024.0,
}


def _open(project: Path) -> Any:
    from memlane.engine.project import Memory

    return Memory.open(project)


def child_build(cfg: dict[str, Any]) -> dict[str, Any]:
    """The project at one size: notes indexed, session messages committed."""
    import numpy as np

    from memlane.embed.factory import vector_space
    from memlane.engine.journal.indexer import Indexer, embedding_inputs
    from memlane.engine.sessions.registry import open_store
    from memlane.index.session_docs import BatchWrite, SessionDoc

    mem = _open(Path(cfg["project"]))
    store_dir = mem.scope.store
    if store_dir.is_dir():
        store_dir.rmdir()  # empty: make_store creates it
    make_store(store_dir, cfg["notes"], CHARS)
    space = vector_space(mem.config.embedding)
    mem.index.ensure_model(space, DIM)
    embedder = PrecomputedVectors()
    indexer = Indexer(mem.scope.store, mem.index, mem.embedding.model, lambda: embedder)
    plan = indexer.plan()
    for item in plan.pending:
        embedder.prepare(embedding_inputs(item.chunks).values())
    started = time.perf_counter()
    indexer.apply(plan)
    notes_s = time.perf_counter() - started

    store = open_store(mem)
    store.ensure_model(mem.embedding.model, DIM)
    rng = random.Random(3)
    vectors_rng = np.random.default_rng(3)
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    sessions_s = 0.0
    for start in range(0, cfg["messages"], SESSION_BATCH):
        count = min(SESSION_BATCH, cfg["messages"] - start)
        vectors = vectors_rng.standard_normal((count, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        batch = BatchWrite()
        for j in range(count):
            n = start + j
            session = f"s{n // MESSAGES_PER_SESSION:05d}"
            moment = clock + timedelta(seconds=30 * n)
            doc = SessionDoc(
                transcript=f"/bench/{session}.jsonl",
                entry_id=f"{n:08x}",
                session_id=session,
                role="user" if n % 2 == 0 else "assistant",
                timestamp=moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                text=entry_text(rng, rng.randint(60, 400)),
                embed=True,
            )
            batch.docs.append(doc)
            batch.vectors[doc.key] = vectors[j]
        began = time.perf_counter()
        store.commit(batch)
        sessions_s += time.perf_counter() - began
    store.checkpoint()
    chunks = mem.index.stats()["chunks"]
    # The first dense search after indexing reads every vector from SQLite
    # once and writes the vector files every later process maps.
    began = time.perf_counter()
    probe = unit_vector("first load")
    mem.index.search("first load", probe, TOP_K)
    store.search("first load", probe, TOP_K)
    load_s = time.perf_counter() - began
    mem.close()
    return {
        "notes_s": round(notes_s, 1),
        "sess_s": round(sessions_s, 1),
        "load_s": round(load_s, 1),
        "notes_indexed": chunks,
        "store": str(store_dir),
    }


def child_search(cfg: dict[str, Any]) -> dict[str, Any]:
    """A new process: first search, then warm searches with and without the model."""
    from memlane.engine.sessions.registry import open_store

    queries: list[str] = cfg["queries"]
    started = time.perf_counter()
    mem = _open(Path(cfg["project"]))
    notes = mem.index
    notes.search(cfg["warmup"], unit_vector(cfg["warmup"]), TOP_K)
    sessions = open_store(mem)
    sessions.search(cfg["warmup"], unit_vector(cfg["warmup"]), TOP_K)
    first_ms = (time.perf_counter() - started) * 1000

    embedding = mem.embedding
    embedding.warm()  # the model's load is the engine's, once per machine: not a search's

    def run(embed: bool) -> tuple[list[float], list[float]]:
        notes_ms, sessions_ms = [], []
        for query in queries:
            for index, out in ((notes, notes_ms), (sessions, sessions_ms)):
                began = time.perf_counter()
                vector = (
                    embedding.query_vector(query, "hybrid", []) if embed else unit_vector(query)
                )
                index.search(query, vector, TOP_K)
                out.append((time.perf_counter() - began) * 1000)
        return notes_ms, sessions_ms

    notes_index, sessions_index = run(embed=False)
    notes_model, sessions_model = run(embed=True)
    mem.close()
    return {
        "first_ms": round(first_ms, 1),
        "notes_p50": round(percentile(notes_index, 50), 2),
        "notes_p95": round(percentile(notes_index, 95), 2),
        "sess_p50": round(percentile(sessions_index, 50), 2),
        "sess_p95": round(percentile(sessions_index, 95), 2),
        "notes_p50_emb": round(percentile(notes_model, 50), 2),
        "sess_p50_emb": round(percentile(sessions_model, 50), 2),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _child(kind: str, cfg: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, json.dumps(cfg)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"the {kind} child failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _disk_mb(home: Path) -> float:
    """The indexes' files (notes and sessions, their write-ahead logs and
    vector files)."""
    files = [p for p in home.rglob("*.sqlite*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 1e6, 1)


def measure(size: int, share: float, queries: int) -> dict[str, Any]:
    messages = round(size * share)
    notes = size - messages
    with tempfile.TemporaryDirectory(prefix="memlane-bench-scale-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
        env.update({"MEMLANE_HOME": str(root / "home"), "MEMLANE_ENGINE": "off", "HOME": str(root)})
        project = root / "project"
        project.mkdir()
        (project / ".git").mkdir()  # the project root scope resolution looks for
        cfg = {"project": str(project), "notes": notes, "messages": messages}
        built = _child("build", cfg, env)
        asked = make_queries(Path(built.pop("store")), queries + 1)
        cfg.update({"queries": asked[1:], "warmup": asked[0]})
        searched = _child("search", cfg, env)
        return {
            "chunks": size,
            "notes": notes,
            "messages": messages,
            **built,
            **searched,
            "disk_mb": _disk_mb(root / "home"),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--session-share", type=float, default=0.8)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, cfg = args.child
        work = child_build if kind == "build" else child_search
        print(json.dumps(work(json.loads(cfg))))
        return 0
    as_installed()
    rows = [measure(int(size), args.session_share, args.queries) for size in args.sizes.split(",")]
    print_table(
        "SQLite backend by store size: index/write s, first load s; first search, "
        "warm p50/p95 ms "
        "(index only; _emb: with the query embedded); RSS and disk MB",
        rows,
    )
    load = os.getloadavg()[0]
    path = write_json(
        "bench-scale",
        {"rows": rows, "targets": TARGETS, "load_1min": round(load, 2), "top_k": TOP_K},
    )
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
