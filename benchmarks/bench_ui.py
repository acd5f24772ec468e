"""Server time of every page of the web viewer (`memlane ui`) on a big store.

Builds a project of ``--entries`` journal entries (40 a day, about 350
characters each, anchored to real pi transcripts of this project:
``--sessions`` of them with ``--messages`` messages each), ``--topics``
topic files, indexes it and the sessions (lexical:
``embedding.provider none``, so building takes seconds; hybrid search
latency is bench_search.py's), then requests every page ``--runs`` times
through the viewer's own application (Starlette's TestClient: routing,
the token check, the engine call and the HTML, without a network) and
reports p50 / p95 per page. The first request of each page is left out
(it opens the index and the sessions store, once per server).

Then the live first page: the application served by uvicorn on 127.0.0.1
(as `memlane ui` serves it), a client listening to ``/events`` as the
page's script does, and ``--live-runs`` entries written to the store by
another Memory (as an agent writes): the time from the write returning to
the ``changed`` event, and to the page's live part (``/fragment/home``)
showing the entry; and the cost of one look at the store (the watcher's
stat of every markdown file, every 0.5 s while a page listens).

    python benchmarks/bench_ui.py [--entries 10000] [--sessions 300] [--messages 300] [--runs 30]

Prints two tables and writes benchmarks/results/ui.json. Targets: every
page ≤ 150 ms p95; a new entry on the open page ≤ 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import entry_text, percentile, print_table, write_json

TARGET_MS = 150.0
LIVE_TARGET_S = 2.0
PER_DAY = 40
SESSION_ID = "bench-ui-session"
QUERIES = ("Redis cache TTL", "flaky webhook handler", "Postgres pool retry", "invoice exporter")


def write_transcript(path: Path, session_id: str, start: datetime, messages: int) -> list[str]:
    """A pi session file of *messages* alternating user/assistant messages, one
    every 3 minutes from *start*; their ids."""
    rng = random.Random(session_id)
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 3,
                "id": session_id,
                "timestamp": start.isoformat(),
                "cwd": str(path.parent),
            }
        )
    ]
    ids: list[str] = []
    parent = None
    for n in range(messages):
        entry_id = f"m{n:07x}"
        role = "user" if n % 2 == 0 else "assistant"
        text = entry_text(rng, 200)
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        moment = start + timedelta(minutes=3 * n)
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "message": {"role": role, "content": content, "timestamp": 0},
                }
            )
        )
        ids.append(entry_id)
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def build(project: Path, entries: int, sessions: int, messages: int, topics: int) -> dict[str, Any]:
    from memlane.transcripts.locate import pi_project_dir

    sessions_dir = pi_project_dir(str(project))
    sessions_dir.mkdir(parents=True)
    first = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    transcript = sessions_dir / "2026-01-01T09-00-00_bench.jsonl"
    turns = write_transcript(transcript, SESSION_ID, first, messages)
    for n in range(1, sessions):
        start = first + timedelta(hours=8 * n)  # three sessions a day
        name = start.strftime("%Y-%m-%dT%H-%M-%S") + f"_bench{n:03d}.jsonl"
        write_transcript(sessions_dir / name, f"{SESSION_ID}-{n:03d}", start, messages)
    user_turns = turns[::2]
    store = project / ".memsearch" / "memory"
    store.mkdir(parents=True)
    rng = random.Random(7)
    day = date(2026, 1, 1)
    written = 0
    while written < entries:
        lines = [f"# {day.isoformat()}", "", "## Session 09:00"]
        for i in range(min(PER_DAY, entries - written)):
            hh, mm = divmod(9 * 60 + i * 7, 60)
            turn = user_turns[written % len(user_turns)]
            lines += [
                "",
                f"### {hh:02d}:{mm:02d}",
                f"<!-- session:{SESSION_ID} turn:{turn} transcript:{transcript} -->",
                entry_text(rng, 350),
            ]
            written += 1
        (store / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        last_day = day
        day += timedelta(days=1)
    topic_dir = store / "topics"
    topic_dir.mkdir()
    index_lines = []
    for t in range(topics):
        slug = f"topic-{t:03d}"
        body = "".join(f"\n## Entry {e}\n{entry_text(rng, 300)}\n" for e in range(10))
        (topic_dir / f"{slug}.md").write_text(
            f"---\nname: Topic {t}\ndescription: bench topic {t}\ntype: project\n"
            f"updated: 2026-0{1 + t % 9}-1{t % 10}\n---\n{body}",
            encoding="utf-8",
        )
        index_lines.append(f"- [Topic {t}](topics/{slug}.md) — bench topic {t}")
    (store / "MEMORY.md").write_text("\n".join(index_lines) + "\n", encoding="utf-8")
    return {"transcript": str(transcript), "turn": user_turns[5], "day": last_day.isoformat()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--messages", type=int, default=300, help="messages per session")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--live-runs", type=int, default=20, help="entries written to an open page")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="memlane-bench-ui-"))
    os.environ["MEMLANE_HOME"] = str(root / "home")
    os.environ["PI_CODING_AGENT_DIR"] = str(root / "pi-agent")
    os.environ["CLAUDE_CONFIG_DIR"] = str(root / "claude")
    os.environ["MEMLANE_EMBEDDING_PROVIDER"] = "none"
    project = root / "proj"
    (project / ".git").mkdir(parents=True)
    built = build(project, args.entries, args.sessions, args.messages, args.topics)

    from starlette.testclient import TestClient

    from memlane.engine.project import Memory
    from memlane.hosts.web.app import build_app
    from memlane.hosts.web.viewer import Viewer

    memory = Memory.open(project)
    t0 = time.perf_counter()
    report = memory.sync()
    index_s = time.perf_counter() - t0
    viewer = Viewer(memory)
    t0 = time.perf_counter()
    viewer.catch_up()  # what the viewer's Background does first when `memlane ui` starts
    sessions_s = time.perf_counter() - t0
    client = TestClient(build_app(viewer), base_url=f"http://127.0.0.1/{viewer.keys.token}")

    search = client.get("/search", params={"q": QUERIES[0], "kind": "journal"}).text
    chunk = re.search(r'data-hash="([0-9a-f]+)"', search)
    assert chunk, "the search found nothing to expand"
    hashes = re.findall(r'data-hash="([0-9a-f]+)"', search)
    pages: list[tuple[str, str, dict[str, str]]] = [
        ("first page (newest memories, timeline)", "/", {}),
        ("first page, its live part", "/fragment/home", {}),
        ("search as you type (fragment)", "/fragment/search", {"q": QUERIES[3]}),
        ("day (40 entries)", f"/day/{built['day']}", {}),
        ("day (3 sessions' messages)", "/day/2026-01-05", {}),
        ("search, notes", "/search", {"q": QUERIES[1]}),
        ("search, everything", "/search", {"q": QUERIES[2], "kind": "all"}),
        ("expand (L2)", "/fragment/expand", {"hash": chunk.group(1)}),
        (
            "transcript (L3)",
            "/fragment/transcript",
            {"path": built["transcript"], "turn": built["turn"]},
        ),
        ("topics", "/topics", {}),
        ("topic", "/topics/topic-001", {}),
        ("sessions", "/sessions", {}),
        ("sessions, page 6", "/sessions", {"page": "6"}),
        ("session (page of 50)", "/session", {"transcript": built["transcript"]}),
        ("session, page 6", "/session", {"transcript": built["transcript"], "page": "6"}),
        ("health", "/health", {}),
        ("what the agent sees", "/agent", {}),
        ("what the agent sees, with a prompt", "/agent", {"prompt": QUERIES[0]}),
        ("forget confirmation", "/forget", {"chunk_hash": hashes[-1]}),
        ("correct form", "/correct", {"chunk_hash": hashes[-2]}),
    ]
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    for name, path, params in pages:
        first = client.get(path, params=params)
        assert first.status_code == 200, (name, first.status_code, first.text[:300])
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            answer = client.get(path, params=params)
            times.append((time.perf_counter() - t) * 1000)
            assert answer.status_code == 200, name
        p50, p95 = percentile(times, 50), percentile(times, 95)
        results[name] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "runs": args.runs}
        rows.append(
            {
                "page": name,
                "p50 ms": p50,
                "p95 ms": p95,
                "≤ 150 ms": "✔" if p95 <= TARGET_MS else "✘",
            }
        )
    # Forget itself: each run removes another entry (its confirmation form, then the POST).
    times = []
    day_page = client.get(f"/day/{built['day']}").text
    addresses = re.findall(r'data-time="([^"]+)"', day_page)[: min(args.runs, 10)]
    for address in addresses:
        confirm = client.get("/forget", params={"date": built["day"], "time": address}).text
        form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', confirm))
        t = time.perf_counter()
        answer = client.post("/forget", data=form, headers={"origin": "http://127.0.0.1"})
        times.append((time.perf_counter() - t) * 1000)
        assert answer.status_code == 200, answer.text[:300]
    p50, p95 = percentile(times, 50), percentile(times, 95)
    results["forget (POST)"] = {
        "p50_ms": round(p50, 2),
        "p95_ms": round(p95, 2),
        "runs": len(times),
    }
    rows.append(
        {
            "page": "forget (POST)",
            "p50 ms": p50,
            "p95 ms": p95,
            "≤ 150 ms": "✔" if p95 <= TARGET_MS else "✘",
        }
    )
    print_table(
        f"memlane ui, server time per page: {report.total_chunks} chunks, "
        f"{args.entries} entries, {args.sessions} sessions x {args.messages} messages, "
        f"{args.topics} topics (lexical; index built in {index_s:.1f} s, sessions in "
        f"{sessions_s:.1f} s)",
        rows,
    )
    from memlane.hosts.web.live import POLL_S

    live = measure_live(viewer, project, args.live_runs)
    print_table(
        f"memlane ui, a new entry on the open first page ({args.live_runs} entries written "
        f"by another Memory; the watcher looks every {POLL_S} s)",
        [
            {"measure": name, "p50": f"{v['p50_s']:.3f} s", "p95": f"{v['p95_s']:.3f} s"}
            for name, v in live.items()
            if name != "store look"
        ]
        + [
            {
                "measure": "one look at the store (stat every markdown file)",
                "p50": f"{live['store look']['p50_ms']:.2f} ms",
                "p95": f"{live['store look']['p95_ms']:.2f} ms",
            }
        ],
    )
    path = write_json(
        "ui",
        {
            "entries": args.entries,
            "sessions": args.sessions,
            "messages_per_session": args.messages,
            "topics": args.topics,
            "chunks": report.total_chunks,
            "pages": results,
            "target_ms": TARGET_MS,
            "live": live,
            "live_target_s": LIVE_TARGET_S,
        },
    )
    print(f"\nwrote {path}")
    client.close()
    viewer.close()
    pages_ok = all(r["p95_ms"] <= TARGET_MS for n, r in results.items() if n != "forget (POST)")
    return 0 if pages_ok and live["page shows it"]["p95_s"] <= LIVE_TARGET_S else 1


def measure_live(viewer: Any, project: Path, runs: int) -> dict[str, Any]:
    """Seconds from a write to the ``changed`` event and to the live part
    showing it, through a real server and a real event stream."""
    import threading
    import urllib.request

    import uvicorn

    from memlane.engine.project import Memory
    from memlane.hosts.web.app import build_app
    from memlane.hosts.web.live import store_signature
    from memlane.hosts.web.server import bind

    sock = bind(0)
    server = uvicorn.Server(
        uvicorn.Config(build_app(viewer), log_level="warning", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/{viewer.keys.token}"
    writer = Memory.open(project)
    to_event: list[float] = []
    to_page: list[float] = []
    stream = urllib.request.urlopen(base + "/events", timeout=60)
    try:
        while stream.readline() != b"event: ready\n":
            pass
        for n in range(runs):
            text = f"the agent moved live check number {n} of the bench to the staging queue"
            t = time.perf_counter()  # the write's own time counts: the page waits for it too
            writer.write(text)
            while not stream.readline().startswith(b"event: changed"):
                pass
            to_event.append(time.perf_counter() - t)
            with urllib.request.urlopen(base + "/fragment/home", timeout=60) as answer:
                assert f"live check number {n} of" in answer.read().decode(), "not on the page"
            to_page.append(time.perf_counter() - t)
            time.sleep(0.3)  # let the next write fall anywhere in the watcher's period
    finally:
        stream.close()
        writer.close()
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
    store = viewer.memory.scope.store
    looks = []
    for _ in range(50):
        t = time.perf_counter()
        store_signature(store)
        looks.append((time.perf_counter() - t) * 1000)
    return {
        "event sent": {"p50_s": percentile(to_event, 50), "p95_s": percentile(to_event, 95)},
        "page shows it": {"p50_s": percentile(to_page, 50), "p95_s": percentile(to_page, 95)},
        "store look": {"p50_ms": percentile(looks, 50), "p95_ms": percentile(looks, 95)},
    }


if __name__ == "__main__":
    raise SystemExit(main())
