"""A search right after a write: what indexing the fresh entry first costs.

A session indexes 5 s after the last write (debounced); a search before that
first indexes just the files the session wrote (``Memory.catch_up``). This
builds a store of ``--chunks`` entry-sized chunks in daily files, indexes it
with the bundled model, opens a real ``Session`` (auto-context on, the
debounced index pushed out of reach) and times, ``--runs`` times each:

* ``memory_search`` with nothing written since the last index (the baseline);
* ``memory_write`` then ``memory_search`` at once: the search's extra time is
  the added latency (median of the paired differences);
* the same for ``before_agent_start`` (auto-context, 300 ms deadline), and
  a capture-sized entry (~570 characters) before a prompt;
* a burst of ``BURST`` writes, then one search;
* for scale: embedding one entry alone, and the full sync a search without a
  session (CLI, MCP) runs first, over the unchanged store.

Every fresh entry should come back as the search's first hit (``found
first``); it must at least be among the hits (``in top 5``): ranking it
first among similar entries is the scoring's job, finding it the catch-up's.

    python benchmarks/bench_fresh.py [--chunks 1000] [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, median, print_table, write_json
from bench_index import make_store

_FACTS = (
    "moved its database to PostgreSQL 16 on port 5433",
    "needs the release manager's sign-off before each production deploy",
    "writes its nightly export as parquet files to the archive bucket",
    "rolls new feature flags out to ten percent of tenants first",
)
BURST = 4  # writes before one search, in the burst case
# One service per fresh note, so each query has exactly one right answer.
_SERVICES = (
    "albatross", "bramble", "cobalt", "dandelion", "ember", "fjord", "garnet", "heron",
    "indigo", "juniper", "kestrel", "lichen", "marlin", "nectar", "obsidian", "pelican",
    "quartz", "rosemary", "saffron", "tamarind", "umber", "vervain", "walrus", "xenon",
    "yarrow", "zephyr", "acorn", "basalt", "cinder", "drizzle", "egret", "fennel",
    "gannet", "hazel", "ibis", "jasper", "kelp", "lupin", "magpie", "nutmeg",
    "osprey", "parsley", "quince", "raven", "sorrel", "thistle", "urchin", "violet",
)  # fmt: skip


def fresh_note(n: int) -> tuple[str, str]:
    """The *n*-th new memory and the query that should find it first."""
    service = _SERVICES[n % len(_SERVICES)]
    fact = _FACTS[n % len(_FACTS)]
    return f"- the {service} service {fact}", f"{service} service {fact}"


def timed(step: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = step(*args, **kwargs)
    return (time.perf_counter() - t0) * 1000, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    if 2 * args.runs + max(1, args.runs // 3) * (BURST + 1) > len(_SERVICES):
        parser.error(f"--runs {args.runs} needs more distinct notes than the {len(_SERVICES)} here")
    with tempfile.TemporaryDirectory(prefix="memlane-bench-fresh-") as tmp:
        root = Path(tmp)
        os.environ["MEMLANE_HOME"] = str(root / "home")
        os.environ["MEMLANE_AUTO_CONTEXT"] = "on"
        project = root / "project"
        (project / ".git").mkdir(parents=True)
        return run(project, args.chunks, args.runs)


def run(project: Path, chunks: int, runs: int) -> int:
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory
    from memlane.engine.tools.dispatch import Tools

    mem = Memory.open(project)
    make_store(mem.scope.store, chunks, 300)
    embedder = mem.embedding.embedder
    assert embedder is not None, mem.embedding.problem
    t0 = time.perf_counter()
    mem.sync()
    build_s = time.perf_counter() - t0
    files = int(mem.index.stats().get("files", 0))
    # The debounced index never comes in reach: every fresh entry a search
    # finds, its catch-up indexed.
    settings = replace(mem.config.session, index_debounce_ms=3_600_000)
    session = Session.start(mem, host="bench", session_id="bench", settings=settings)
    assert session.internals.indexer.settle(600)
    assert session.internals.wait_auto_context_ready(120)
    tools = Tools(mem, session)
    rng = random.Random(5)
    one_entry = entry_text(rng, 300)
    embed_ms = [timed(embedder.embed, [one_entry])[0] for _ in range(runs)]
    full_sync_ms = [timed(mem.sync, quiet_when_idle=True)[0] for _ in range(runs)]

    def search(query: str) -> tuple[float, list[dict[str, Any]]]:
        ms, result = timed(tools.call, "memory_search", {"query": query})
        return ms, result.details["hits"]

    baseline, fresh_search, catch_up, added = [], [], [], []
    first = found = 0
    serial = 0
    for _ in range(runs):
        serial += 1
        text, query = fresh_note(serial)
        base_ms, _ = search(query)
        tools.call("memory_write", {"text": text})
        ms, hits = search(query)
        baseline.append(base_ms)
        fresh_search.append(ms)
        added.append(ms - base_ms)
        catch_up.append(float(mem.internals.fresh.stats.last_ms or 0.0))
        first += bool(hits) and text[2:] in hits[0]["content"]
        found += any(text[2:] in hit["content"] for hit in hits)

    ac_base, ac_fresh, ac_added = [], [], []
    ac_first = 0
    for _ in range(runs):
        serial += 1
        text, query = fresh_note(serial)
        prompt = f"What did we decide about {query}?"
        base_ms, _ = timed(session.before_agent_start, prompt)
        tools.call("memory_write", {"text": text})
        ms, injection = timed(session.before_agent_start, prompt)
        ac_base.append(base_ms)
        ac_fresh.append(ms)
        ac_added.append(ms - base_ms)
        ac_first += injection.message is not None and text[2:] in injection.message

    # A capture-sized entry (~570 characters of bullets, ~870 with its
    # context) before a prompt: within AUTO_CONTEXT_CATCH_UP_CHARS, so
    # auto-context indexes it first.
    big_ms, big_catch_up = [], []
    big_found = big_caught = 0
    for _ in range(max(1, runs // 3)):
        serial += 1
        text, query = fresh_note(serial)
        entry = f"{text}\n{entry_text(rng, 500)}"
        tools.call("memory_write", {"text": entry})
        ms, injection = timed(session.before_agent_start, f"What did we decide about {query}?")
        big_ms.append(ms)
        big_catch_up.append(float(mem.internals.fresh.stats.last_ms or 0.0))
        big_found += injection.message is not None and text[2:] in injection.message
        big_caught += mem.internals.fresh.waiting == 0

    burst_ms, burst_catch_up = [], []
    burst_first = 0
    for _ in range(max(1, runs // 3)):
        notes = []
        for _ in range(BURST):
            serial += 1
            notes.append(fresh_note(serial))
            tools.call("memory_write", {"text": notes[-1][0]})
        ms, hits = search(notes[-1][1])
        burst_ms.append(ms)
        burst_catch_up.append(float(mem.internals.fresh.stats.last_ms or 0.0))
        burst_first += bool(hits) and notes[-1][0][2:] in hits[0]["content"]

    stats = mem.internals.fresh.to_json()
    auto_context = session.auto_context.to_json()
    session.shutdown(cap_ms=5000)
    chunks_now = int(mem.index.stats().get("chunks", 0))
    mem.close()

    result: dict[str, Any] = {
        "chunks": chunks_now,
        "files": files,
        "runs": runs,
        "search_baseline_ms": median(baseline),
        "search_after_write_ms": median(fresh_search),
        "search_added_ms": median(added),
        "catch_up_ms": median(catch_up),
        "search_found_first": first,
        "search_found_in_top_k": found,
        "auto_context_baseline_ms": median(ac_base),
        "auto_context_after_write_ms": median(ac_fresh),
        "auto_context_added_ms": median(ac_added),
        "auto_context_found": ac_first,
        "capture_sized_auto_context_ms": median(big_ms),
        "capture_sized_catch_up_ms": median(big_catch_up),
        "capture_sized_found": big_found,
        "capture_sized_caught_up": big_caught,
        "capture_sized_runs": len(big_ms),
        "auto_context_missed_deadline": auto_context["skippedBudget"],
        "burst_entries": BURST,
        "burst_search_ms": median(burst_ms),
        "burst_catch_up_ms": median(burst_catch_up),
        "burst_found_first": burst_first,
        "burst_runs": len(burst_ms),
        "embed_one_entry_ms": median(embed_ms),
        "full_sync_unchanged_ms": median(full_sync_ms),
        "catch_up_stats": stats,
        "auto_context_state": auto_context,
        "build_s": build_s,
        "load_avg": round(os.getloadavg()[0], 2),
    }
    print_table(
        f"search right after a write (bundled model, {chunks_now} chunks in {files} files, "
        f"median of {runs})",
        [
            {
                "case": "memory_search",
                "baseline ms": result["search_baseline_ms"],
                "after write ms": result["search_after_write_ms"],
                "added ms": result["search_added_ms"],
                "catch-up ms": result["catch_up_ms"],
                "found": f"{first}/{runs} first, {found}/{runs} in top 5",
            },
            {
                "case": "auto-context",
                "baseline ms": result["auto_context_baseline_ms"],
                "after write ms": result["auto_context_after_write_ms"],
                "added ms": result["auto_context_added_ms"],
                "catch-up ms": "",
                "found": f"{ac_first}/{runs} injected",
            },
            {
                "case": "auto-context, 570-char entry",
                "baseline ms": "",
                "after write ms": result["capture_sized_auto_context_ms"],
                "added ms": "",
                "catch-up ms": result["capture_sized_catch_up_ms"],
                "found": f"{big_caught}/{len(big_ms)} indexed, {big_found} injected",
            },
            {
                "case": f"memory_search after {BURST} writes",
                "baseline ms": "",
                "after write ms": result["burst_search_ms"],
                "added ms": "",
                "catch-up ms": result["burst_catch_up_ms"],
                "found": f"{burst_first}/{len(burst_ms)} first",
            },
        ],
    )
    print_table(
        "for scale",
        [
            {
                "embed one 300-char entry ms": result["embed_one_entry_ms"],
                "full sync of the unchanged store ms": result["full_sync_unchanged_ms"],
                "auto-context deadline misses": result["auto_context_missed_deadline"],
            }
        ],
    )
    path = write_json("fresh", result)
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
