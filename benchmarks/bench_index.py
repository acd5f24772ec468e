"""Indexing throughput and peak RSS with the bundled model.

Each case runs in a fresh process (its own MEMLANE_HOME and store) so the
model load, the peak RSS and the chunks/s are that case's alone.

    python benchmarks/bench_index.py [--short N] [--long N]
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
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, print_table, write_json


def make_store(store: Path, chunks: int, chars: int, seed: int = 7) -> None:
    """Daily files of ``chunks`` entries, each one entry-sized chunk of about ``chars``."""
    rng = random.Random(seed)
    store.mkdir(parents=True)
    per_day = 40
    day = date(2026, 1, 1)
    written = 0
    while written < chunks:
        lines = [f"# {day.isoformat()}", "", "## Session 09:00"]
        for i in range(min(per_day, chunks - written)):
            hh, mm = divmod(9 * 60 + i * 7, 60)
            lines += [
                "",
                f"### {hh:02d}:{mm:02d}",
                f"<!-- session:bench-{day} turn:{written:08x} transcript:/tmp/t.jsonl -->",
                entry_text(rng, chars),
            ]
            written += 1
        (store / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n")
        day += timedelta(days=1)


def child(chunks: int, chars: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="memlane-bench-index-"))
    os.environ["MEMLANE_HOME"] = str(root / "home")
    project = root / "proj"
    make_store(project / ".memsearch" / "memory", chunks, chars)
    from memlane.engine.project import Memory

    mem = Memory.open(project)
    t0 = time.perf_counter()
    embedder = mem.embedding.embedder
    assert embedder is not None, mem.embedding.problem
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    report = mem.sync()
    index_s = time.perf_counter() - t1
    assert report.embedded_chunks == report.total_chunks, report.to_json()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "chunk_chars": chars,
                "chunks": report.total_chunks,
                "model_load_s": round(load_s, 3),
                "index_s": round(index_s, 3),
                "chunks_per_s": round(report.total_chunks / index_s, 1),
                "peak_rss_mb": round(rss_mb, 1),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=2000, help="entry-sized chunks (~350 chars)")
    parser.add_argument("--long", type=int, default=300, help="1,500-character chunks")
    parser.add_argument(
        "--child", nargs=2, type=int, metavar=("CHUNKS", "CHARS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    rows = []
    for chunks, chars in ((args.short, 350), (args.long, 1500)):
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(chunks), str(chars)],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print_table("Indexing with the bundled all-MiniLM-L6-v2 (int8 ONNX), 2 cores", rows)
    print(f"\nwrote {write_json('index', {'cases': rows, 'target_chunks_per_s_short': 150})}")


if __name__ == "__main__":
    main()
