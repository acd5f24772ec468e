"""The sessions layer: backfill throughput, hook latency, recall latency, size.

Each case runs in a fresh process with its own MEMLANE_HOME and pi agent dir:

- backfill: a synthetic pi history of ``--messages`` user/assistant messages
  (default 20,000; plus one tool result per 10 messages, stored lexical-only)
  in 40 session files, embedded with the bundled model in batches of 32;
  messages/s counts embedded messages over the whole pass (read, embed,
  write). Then the index size per 1k messages;
- hook: ``SessionsLayer.index_new(path)`` after one appended message: the
  host's call (it only enqueues) p50/p95, and the time until the message is
  searchable;
- recall at ``--docs`` (default 100,000) session documents with random
  unit 384-d vectors written directly (no model, like bench_search.py):
  hybrid, lexical and session-filtered p50/p95 (query embedding excluded),
  and the first search (loads the vector matrix).

    python benchmarks/bench_sessions.py [--messages N] [--docs N] [--lengths mixed,short]
                                        [--skip-backfill]

Targets (issue 8): backfill >= 150 messages/s on 2 cores, hook p50 <= 5 ms,
recall p50 <= 20 ms at 100k documents.
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
from _common import entry_text, percentile, print_table, write_json

FILES = 40
DIM = 384
HOOK_ROUNDS = 200
QUERIES = 300
TARGETS = {"messages_per_s": 150.0, "hook_p50_ms": 5.0, "recall_p50_ms": 20.0}

_QUESTIONS = [
    "how do we handle",
    "why does",
    "can you fix",
    "what happened to",
    "please refactor",
    "remember when we changed",
]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# Message lengths (chars): user, assistant. "mixed" has assistant replies up
# to 600 chars; "short" caps them near the embed bench's 298-char texts.
LENGTHS = {"mixed": ((40, 200), (120, 600)), "short": ((40, 200), (80, 300))}


def write_history(
    directory: Path, cwd: str, messages: int, seed: int = 11, lengths: str = "mixed"
) -> list[Path]:
    """pi session files holding ``messages`` user/assistant messages in total."""
    (user_lo, user_hi), (reply_lo, reply_hi) = LENGTHS[lengths]
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    per_file = max(2, messages // FILES)
    clock = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    written = 0
    paths: list[Path] = []
    index = 0
    while written < messages:
        sid = f"0190bench-{index:04d}"
        lines = [
            json.dumps(
                {"type": "session", "version": 3, "id": sid, "timestamp": _iso(clock), "cwd": cwd}
            )
        ]
        parent: str | None = None
        for i in range(min(per_file, messages - written)):
            clock += timedelta(seconds=rng.randint(5, 90))
            entry = f"{index:04x}{i:04x}"
            if i % 2 == 0:
                text = (
                    f"{rng.choice(_QUESTIONS)} {entry_text(rng, rng.randint(user_lo, user_hi))[2:]}"
                )
                message: dict[str, Any] = {"role": "user", "content": text, "timestamp": 0}
            else:
                text = entry_text(rng, rng.randint(reply_lo, reply_hi))
                message = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": 0,
                }
            lines.append(
                json.dumps(
                    {
                        "type": "message",
                        "id": entry,
                        "parentId": parent,
                        "timestamp": _iso(clock),
                        "message": message,
                    }
                )
            )
            parent = entry
            written += 1
            if i % 10 == 9:
                tool = f"{entry}t"
                lines.append(
                    json.dumps(
                        {
                            "type": "message",
                            "id": tool,
                            "parentId": parent,
                            "timestamp": _iso(clock),
                            "message": {
                                "role": "toolResult",
                                "toolCallId": "c",
                                "toolName": "bash",
                                "content": [{"type": "text", "text": "ok " * 40}],
                                "isError": False,
                                "timestamp": 0,
                            },
                        }
                    )
                )
                parent = tool
        path = directory / f"{_iso(clock).replace(':', '-')}_{sid}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
        index += 1
    return paths


def _env(root: Path) -> None:
    os.environ["MEMLANE_HOME"] = str(root / "home")
    os.environ["PI_CODING_AGENT_DIR"] = str(root / "pi-agent")
    os.environ["CLAUDE_CONFIG_DIR"] = str(root / "claude")
    os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)


def child_backfill(messages: int, lengths: str) -> dict[str, Any]:
    load = os.getloadavg()[0]  # other work on the 2 cores skews messages/s
    root = Path(tempfile.mkdtemp(prefix="memlane-bench-sessions-"))
    _env(root)
    project = root / "proj"
    project.mkdir()
    from memlane.engine.project import Memory
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.transcripts.locate import pi_session_dir_name

    cwd = str(project.resolve())
    sessions_dir = root / "pi-agent" / "sessions" / pi_session_dir_name(cwd)
    paths = write_history(sessions_dir, cwd, messages, lengths=lengths)
    mem = Memory.open(project)
    t0 = time.perf_counter()
    embedder = mem.embedding.embedder
    assert embedder is not None, mem.embedding.problem
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t0
    layer = SessionsLayer(mem)
    t1 = time.perf_counter()
    report = layer.backfill()
    backfill_s = time.perf_counter() - t1
    stats = layer.stats()  # sized right after the backfill (it checkpoints the WAL)
    assert report.embedded == messages, report.to_json()

    # Hook path: append one message, time the host's call, then the wait
    # until it is searchable.
    target = paths[-1]
    calls: list[float] = []
    visible: list[float] = []
    rng = random.Random(5)
    for i in range(HOOK_ROUNDS):
        word = f"hookword{i:04d}"
        line = {
            "type": "message",
            "id": f"hook{i:04d}",
            "parentId": None,
            "timestamp": _iso(datetime(2026, 6, 1, tzinfo=UTC) + timedelta(seconds=i)),
            "message": {
                "role": "user",
                "content": f"{word} {entry_text(rng, 120)}",
                "timestamp": 0,
            },
        }
        with target.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        start = time.perf_counter()
        layer.index_new(target)
        calls.append((time.perf_counter() - start) * 1000)
        layer.flush(30)
        visible.append((time.perf_counter() - start) * 1000)
        assert layer.search(word, 1, mode="lexical").hits
    layer.close()
    return {
        "loadavg_at_start": round(load, 2),
        "lengths": lengths,
        "messages": messages,
        "documents": stats["documents"],
        "model_load_s": round(load_s, 3),
        "backfill_s": round(backfill_s, 2),
        "messages_per_s": round(messages / backfill_s, 1),
        "batches": report.batches,
        "db_mb": round(stats["size_bytes"] / 1e6, 2),
        "kb_per_1k_messages": round(stats["size_bytes"] / 1024 / (messages / 1000), 1),
        "hook_call_p50_ms": round(percentile(calls, 50), 3),
        "hook_call_p95_ms": round(percentile(calls, 95), 3),
        "hook_to_searchable_p50_ms": round(percentile(visible, 50), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def child_recall(docs: int) -> dict[str, Any]:
    import numpy as np

    root = Path(tempfile.mkdtemp(prefix="memlane-bench-sessions-recall-"))
    _env(root)
    from memlane.core.settings import IndexSettings, SessionsSettings
    from memlane.index.session_docs import BatchWrite, SessionDoc, SessionFilters
    from memlane.index.sqlite.sessions import SessionStore

    rng = random.Random(3)
    nrng = np.random.default_rng(3)
    path = root / "bench.sessions.sqlite"
    store = SessionStore(path, IndexSettings(), SessionsSettings())
    store.ensure_model("bench-model", DIM)
    per_session = 500
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    build0 = time.perf_counter()
    for start in range(0, docs, 5000):
        batch = BatchWrite()
        count = min(5000, docs - start)
        vectors = nrng.standard_normal((count, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for j in range(count):
            n = start + j
            role = "user" if n % 2 == 0 else "assistant"
            doc = SessionDoc(
                transcript=f"/bench/s{n // per_session:04d}.jsonl",
                entry_id=f"{n:08x}",
                session_id=f"s{n // per_session:04d}",
                role=role,
                timestamp=_iso(clock + timedelta(seconds=30 * n)),
                text=entry_text(rng, rng.randint(60, 400)),
                embed=True,
            )
            batch.docs.append(doc)
            batch.vectors[doc.key] = vectors[j]
        store.commit(batch)
    build_s = time.perf_counter() - build0
    store.checkpoint()
    size = store.stats()["size_bytes"]
    store.close()

    store = SessionStore(path, IndexSettings(), SessionsSettings())
    queries = [entry_text(rng, 60)[2:] for _ in range(QUERIES)]
    qvecs = nrng.standard_normal((QUERIES, DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    t0 = time.perf_counter()
    store.search(queries[0], qvecs[0], 10)
    first_ms = (time.perf_counter() - t0) * 1000

    def timed(fn: Any) -> list[float]:
        out = []
        for i in range(QUERIES):
            t = time.perf_counter()
            fn(i)
            out.append((time.perf_counter() - t) * 1000)
        return out

    hybrid = timed(lambda i: store.search(queries[i], qvecs[i], 10))
    lexical = timed(lambda i: store.search(queries[i], None, 10))
    filtered = timed(
        lambda i: store.search(
            queries[i], qvecs[i], 10, SessionFilters(session=f"s{i % (docs // per_session):04d}")
        )
    )
    store.close()
    return {
        "documents": docs,
        "build_s": round(build_s, 1),
        "db_mb": round(size / 1e6, 1),
        "kb_per_1k_docs": round(size / 1024 / (docs / 1000), 1),
        "first_search_ms": round(first_ms, 1),
        "hybrid_p50_ms": round(percentile(hybrid, 50), 2),
        "hybrid_p95_ms": round(percentile(hybrid, 95), 2),
        "lexical_p50_ms": round(percentile(lexical, 50), 2),
        "lexical_p95_ms": round(percentile(lexical, 95), 2),
        "session_filtered_p50_ms": round(percentile(filtered, 50), 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _run_child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"child {args} failed")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--skip-backfill", action="store_true")
    parser.add_argument(
        "--lengths",
        default="mixed",
        help="message lengths: mixed, short, or both (comma-separated)",
    )
    parser.add_argument("--child", choices=("backfill", "recall"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "backfill":
        print(json.dumps(child_backfill(args.messages, args.lengths)))
        return
    if args.child == "recall":
        print(json.dumps(child_recall(args.docs)))
        return
    results: dict[str, Any] = {"cores": os.cpu_count(), "targets": TARGETS}
    if not args.skip_backfill:
        cases = [
            _run_child(
                ["--child", "backfill", "--messages", str(args.messages), "--lengths", lengths]
            )
            for lengths in args.lengths.split(",")
        ]
        results["backfill"] = cases
        print_table("backfill + hook (bundled model)", cases)
    recall = _run_child(["--child", "recall", "--docs", str(args.docs)])
    results["recall"] = recall
    print_table(f"recall at {args.docs} session documents (query vectors given)", [recall])
    path = write_json("sessions", results)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
