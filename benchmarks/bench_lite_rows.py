"""What one Milvus Lite search costs by the rows it returns, and the fields.

memlane's search on Milvus asks each leg for its 20 best candidates for
k = 10 (100 until ADR 0048 made a candidate's calibrated score independent
of the others in the pool), memsearch's hybrid search asks for 10 fused
rows. Milvus Lite 3.x is pure Python and pays for every row a
search returns, so this script measures one collection of memlane's schema
(entry-like text, random unit vectors) searched by:

- the dense leg and the BM25 leg at limits 10, 20 (memlane's today) and
  100, returning only the chunk hash, memlane's fields, or its fields and
  the vector;
- a ``get`` of 50 rows' vectors (a lexical-only candidate's cosine);
- memsearch's shape: one ``hybrid_search`` (both legs, RRF) of 10 rows;
- both of memlane's legs in one ``hybrid_search`` (20 per leg, 40 rows),
  with memlane's fields, and with the vectors too.

    python benchmarks/bench_lite_rows.py [--chunks 1000] [--queries 150]

Writes benchmarks/results/bench-lite-rows.json.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, percentile, print_table, write_json

DIM = 384


def build(client: Any, name: str, chunks: int, rng: random.Random) -> list[str]:
    from memlane.index.milvus import schema

    schema.create(client, name, DIM)
    nrng = np.random.default_rng(7)
    texts = [entry_text(rng, 400) for _ in range(chunks)]
    vectors = nrng.standard_normal((chunks, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [
        {
            schema.PRIMARY: f"{i:016x}",
            schema.VECTOR: vectors[i].tolist(),
            "content": text,
            "source": f"/bench/.memsearch/memory/2026-01-{i % 28 + 1:02d}.md",
            "heading": "10:00",
            "heading_level": 3,
            "start_line": 1,
            "end_line": 2,
            schema.KIND: "journal",
            schema.DATE: f"2026-01-{i % 28 + 1:02d}",
            schema.SESSION: None,
        }
        for i, text in enumerate(texts)
    ]
    for start in range(0, len(rows), 500):
        client.insert(name, rows[start : start + 500])
    client.flush(name)
    client.load_collection(name)
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()

    from pymilvus import AnnSearchRequest, MilvusClient, RRFRanker

    from memlane.index.milvus import schema
    from memlane.index.milvus.search import BM25_PARAMS, COSINE_PARAMS, query_words

    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="memlane-lite-rows-") as tmp:
        client = MilvusClient(uri=str(Path(tmp) / "milvus.db"))
        name = "bench_rows"
        texts = build(client, name, args.chunks, rng)
        queries = [
            " ".join(query_words(rng.choice(texts))[:5]) or "cache" for _ in range(args.queries)
        ]
        nrng = np.random.default_rng(3)
        qvecs = nrng.standard_normal((len(queries), DIM)).astype(np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        fields = {
            "hash": [schema.PRIMARY],
            "fields": list(schema.CHUNK_FIELDS),
            "fields+vector": [*schema.CHUNK_FIELDS, schema.VECTOR],
        }
        ids = [f"{i:016x}" for i in rng.sample(range(args.chunks), 50)]

        def dense(limit: int, out: list[str]) -> Callable[[int], object]:
            return lambda i: client.search(
                name, data=[qvecs[i].tolist()], anns_field=schema.VECTOR, limit=limit,
                search_params=COSINE_PARAMS, output_fields=out,
            )  # fmt: skip

        def bm25(limit: int, out: list[str]) -> Callable[[int], object]:
            return lambda i: client.search(
                name, data=[queries[i]], anns_field=schema.SPARSE, limit=limit,
                search_params=BM25_PARAMS, output_fields=out,
            )  # fmt: skip

        def hybrid(leg_limit: int, limit: int, out: list[str]) -> Callable[[int], object]:
            def call(i: int) -> object:
                legs = [
                    AnnSearchRequest([qvecs[i].tolist()], schema.VECTOR, COSINE_PARAMS, leg_limit),
                    AnnSearchRequest([queries[i]], schema.SPARSE, BM25_PARAMS, leg_limit),
                ]
                return client.hybrid_search(
                    name, legs, RRFRanker(60), limit=limit, output_fields=out
                )

            return call

        cases: list[tuple[str, int, str, Callable[[int], object]]] = []
        for leg, make in (("dense", dense), ("bm25", bm25)):
            for limit in (10, 20, 100):
                for label, out in fields.items():
                    cases.append((leg, limit, label, make(limit, out)))
        cases.append(
            (
                "get",
                50,
                "vector",
                lambda i: client.get(name, ids=ids, output_fields=[schema.VECTOR]),
            )
        )
        cases.append(
            ("hybrid (memsearch's)", 10, "content, source", hybrid(10, 10, ["content", "source"]))
        )
        for label in ("fields", "fields+vector"):
            cases.append(("hybrid, 20 per leg", 40, label, hybrid(20, 40, fields[label])))
        times: dict[int, list[float]] = {n: [] for n in range(len(cases))}
        for i in range(len(queries)):  # case by case within each query: load falls on all alike
            for n, (_, _, _, call) in enumerate(cases):
                t0 = time.perf_counter()
                call(i)
                times[n].append((time.perf_counter() - t0) * 1000)
        client.close()
    rows = [
        {
            "call": leg,
            "rows": limit,
            "returns": label,
            "p50_ms": round(percentile(times[n], 50), 2),
            "p95_ms": round(percentile(times[n], 95), 2),
        }
        for n, (leg, limit, label, _) in enumerate(cases)
    ]
    print_table(f"Milvus Lite, {args.chunks} chunks, one call", rows)
    path = write_json(
        "bench-lite-rows", {"chunks": args.chunks, "queries": args.queries, "calls": rows}
    )
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
