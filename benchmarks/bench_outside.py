"""A session's first search and what other tools wrote before it started.

Until a session's start has caught up (its index run, the sweep of past
sessions it wakes), a search indexes what other processes wrote itself:
store files changed on disk (engine/journal/catch_up.py, ``outside_writes``)
and transcripts that grew (engine/sessions/catch_up.py), for the lexical leg
(the model may still be loading: all of a ``pi -p`` run). This times those
steps in a store of ``--chunks`` entry-sized notes:

* the walk with nothing changed (a stat per file and the index's file list),
  what every search pays until the start has caught up;
* indexing a daily file another tool wrote, by its size;
* reading a new transcript (pi JSONL), by its size.

The budgets (``OUTSIDE_CATCH_UP_BYTES``, ``OUTSIDE_TRANSCRIPT_BYTES``, 256 KB
each) keep what a first search adds near a quarter of a second at most;
past them it answers at once and says that memory is catching up.

    python benchmarks/bench_outside.py [--chunks 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, median, print_table, write_json
from bench_index import make_store
from bench_sessions import write_history

NOTE_SIZES = (10_000, 100_000, 250_000, 600_000)  # bytes of one note file written outside
TRANSCRIPT_MESSAGES = (40, 200, 500, 1500)  # messages of one new transcript


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-outside-") as tmp:
        root = Path(tmp)
        os.environ["MEMLANE_HOME"] = str(root / "home")
        os.environ["PI_CODING_AGENT_DIR"] = str(root / "pi-agent")
        os.environ["CLAUDE_CONFIG_DIR"] = str(root / "claude")
        os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)
        # The lexical leg only: what the search does while the model loads.
        os.environ["MEMLANE_EMBEDDING_PROVIDER"] = "none"
        project = root / "project"
        (project / ".git").mkdir(parents=True)
        return run(project, args.chunks, args.runs)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def run(project: Path, chunks: int, runs: int) -> int:
    from memlane.engine.journal.catch_up import OUTSIDE_CATCH_UP_BYTES, outside_writes
    from memlane.engine.project import Memory
    from memlane.engine.sessions.catch_up import OUTSIDE_TRANSCRIPT_BYTES, catch_up_transcripts
    from memlane.engine.sessions.layer import SessionsLayer
    from memlane.transcripts.locate import pi_project_dir

    mem = Memory.open(project)
    make_store(mem.scope.store, chunks, 300)
    mem.sync()
    files = int(mem.index.stats().get("files", 0))
    rows: list[dict[str, Any]] = []

    idle = []
    for _ in range(runs):
        t0 = time.perf_counter()
        said, complete = outside_writes(mem, embed=False)
        idle.append(_ms(t0))
        assert said == [] and complete
    rows.append(
        {
            "case": f"walk, nothing changed ({files} files)",
            "bytes": 0,
            "answer": "-",
            "ms": median(idle),
        }
    )

    rng = random.Random(3)
    serial = 0
    for size in NOTE_SIZES:
        times = []
        for _ in range(runs):
            serial += 1
            lines = [f"# outside {serial}", ""]
            while sum(len(x) + 1 for x in lines) < size:
                lines += [f"### 09:{len(lines) % 60:02d}", entry_text(rng, 300), ""]
            path = mem.scope.store / f"outside-{serial}.md"
            path.write_text("\n".join(lines))
            t0 = time.perf_counter()
            said, complete = outside_writes(mem, embed=False)
            times.append(_ms(t0))
            assert complete == (size <= OUTSIDE_CATCH_UP_BYTES), said
            path.unlink()
            outside_writes(mem, embed=False)  # its chunks leave the index again
        answer = "indexed" if size <= OUTSIDE_CATCH_UP_BYTES else "catching up"
        rows.append(
            {
                "case": "a note file written outside",
                "bytes": size,
                "answer": answer,
                "ms": median(times),
            }
        )

    SessionsLayer(mem).backfill()
    sessions = pi_project_dir(str(project))
    for messages in TRANSCRIPT_MESSAGES:
        times = []
        size = 0
        for n in range(runs):
            staging = project.parent / f"staging-{messages}-{n}"
            written = write_history(staging, str(project), messages, seed=n + messages)
            sessions.mkdir(parents=True, exist_ok=True)
            # One new transcript: the history's files joined (each keeps its header).
            final = sessions / f"new-{messages}-{n}.jsonl"
            final.write_bytes(b"".join(p.read_bytes() for p in written))
            size = final.stat().st_size
            t0 = time.perf_counter()
            said = catch_up_transcripts(mem)
            times.append(_ms(t0))
            assert (said == []) == (size <= OUTSIDE_TRANSCRIPT_BYTES), said
        answer = "read" if size <= OUTSIDE_TRANSCRIPT_BYTES else "catching up"
        rows.append(
            {"case": "a new transcript", "bytes": size, "answer": answer, "ms": median(times)}
        )

    print_table(f"first-search catch-up of outside writes ({chunks} notes, median of {runs})", rows)
    path = write_json("outside", {"chunks": chunks, "files": files, "runs": runs, "rows": rows})
    print(f"\nwrote {path}")
    mem.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
