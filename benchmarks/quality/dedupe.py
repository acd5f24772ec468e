"""Extraction that does not repeat itself (issue 29): duplicates added, new facts kept.

The set (``repeated_facts.json``): the tern project's topic files; a dream
that merges some of their entries into longer ones (the real plan, apply and
re-index code of ``memlane dream``, its LLM answer scripted); then 40
proposals an extraction LLM might make afterwards, each run through the real
extraction (``engine.topics.extraction.extract``) with a fake OpenAI server on
127.0.0.1 answering exactly that proposal:

  repeated  20 restatements of a fact the topics already hold, in other words
            and mostly under another topic or title; 10 of them restate a fact
            the dream merged into a longer entry. Target: 0 added.
  new       20 near misses: genuinely new facts about the same subjects (2 of
            them a changed value). Target: all 20 added.

Each proposal meets the same store (the topic files as the dream left them:
what one proposal wrote is undone before the next). Systems: ``model`` (the
bundled embedding model) and ``lexical`` (no embedder: word overlap only).

    python benchmarks/quality/dedupe.py [--systems model,lexical] [--out FILE]

Prints a table per system and writes ``benchmarks/results/quality-dedupe.json``
(every proposal's outcome and the reason extraction gave).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests"))  # fake_llm: the fake OpenAI server
DATA = HERE / "repeated_facts.json"
CHANGED = HERE / "changed_memory.json"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-dedupe.json"
SYSTEMS = {"model": None, "lexical": "none"}
NOW = "2026-11-30T10:00:00Z"
TIMEOUT_S = 30.0


def load(path: Path = DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def seed(store: Path, data: dict[str, Any], today: Any) -> None:
    """The topic files as they were before the dream."""
    from memlane.store import topics as store_topics

    for topic in data["topics"]:
        for title, content in topic["entries"]:
            store_topics.add(
                store,
                content=content,
                topic=topic["name"],
                title=title,
                type=topic["type"],
                today=today,
            )


def proposal_of(item: dict[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in ("topic", "title", "content", "type")}


def changed_set(path: Path = CHANGED) -> dict[str, Any]:
    """The quarry project's 19 changed decisions (``changed_memory.json``, written
    for issue 27, not for this): its other 53 entries as topic files, one topic
    per session, and each newer entry of a change proposed, which must be added."""
    data = json.loads(path.read_text(encoding="utf-8"))
    newer = {q["gold"] for q in data["questions"] if q["category"] == "changed"}
    topics, proposals = [], []
    for session in data["sessions"]:
        kept = [e for e in session["entries"] if e["id"] not in newer]
        name = f"Quarry {session['id']}"
        topics.append(
            {
                "name": name,
                "type": "project",
                "entries": [[_title(e["text"]), e["text"]] for e in kept],
            }
        )
        proposals += [
            {
                "id": e["id"],
                "topic": name,
                "title": _title(e["text"]),
                "content": e["text"],
                "type": "project",
                "changed": True,
            }
            for e in session["entries"]
            if e["id"] in newer
        ]
    return {"topics": topics, "dream": None, "repeated": [], "new": proposals}


def _title(text: str) -> str:
    words = text.split()
    title = ""
    for word in words:
        if len(title) + len(word) + 1 > 70:
            break
        title = f"{title} {word}".strip()
    return title.rstrip(",;:")


def run_system(name: str, data: dict[str, Any], workdir: Path) -> dict[str, Any]:
    from fake_llm import FakeOpenAI
    from memlane.core.clock import FixedClock
    from memlane.core.config import load_config
    from memlane.core.scope import resolve_scope
    from memlane.core.settings import LlmSettings
    from memlane.core.types import Exchange
    from memlane.engine.project import Memory
    from memlane.engine.topics import dream as D
    from memlane.engine.topics.extraction import extract
    from memlane.llm.factory import make_llm

    project = workdir / name / "project"
    project.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "MEMSEARCH_"))}
    env["MEMLANE_HOME"] = str(workdir / name / "home")
    if os.environ.get("MEMLANE_CACHE_DIR"):
        env["MEMLANE_CACHE_DIR"] = os.environ["MEMLANE_CACHE_DIR"]
    if SYSTEMS[name]:
        env["MEMLANE_EMBEDDING_PROVIDER"] = str(SYSTEMS[name])
    clock = FixedClock(datetime.fromisoformat(NOW))
    scope = resolve_scope(project, env=env)
    mem = Memory(scope, load_config(scope.repository_dir, env=env), clock=clock)
    store = scope.store
    store.mkdir(parents=True)
    seed(store, data, clock.today())
    mem.sync()
    outcomes: list[dict[str, Any]] = []
    with FakeOpenAI(answer=json.dumps(data["dream"]), stream=False) as server:
        llm = make_llm(
            LlmSettings(provider="openai", base_url=server.base_url, model="fake-curator")
        )
        assert llm is not None
        if data["dream"] is not None:
            plan = D.make_plan(mem, llm)
            D.apply_plan(plan, now=clock.now())
            D.sync_index(mem)
        kept = {p.name: p.read_bytes() for p in (store / "topics").iterdir()}
        index = (store / "MEMORY.md").read_bytes()
        settings = replace(mem.config.topics, enabled=True, extract_memories_enabled=True)
        for kind in ("repeated", "new"):
            for item in data[kind]:
                server.set(answer=json.dumps([proposal_of(item)]))
                exchange = Exchange(
                    user="Anything worth remembering from this?",
                    assistant=f"{item['title']}: {item['content']}",
                )
                started = time.perf_counter()
                report = extract(mem, exchange, llm, settings=settings, timeout_s=TIMEOUT_S)
                took = (time.perf_counter() - started) * 1000
                outcomes.append(
                    {
                        "id": item["id"],
                        "kind": kind,
                        "merged": bool(item.get("merged")),
                        "changed": bool(item.get("changed")),
                        "added": report.wrote,
                        "status": report.status,
                        "reason": "; ".join(s["reason"] for s in report.skipped) or report.error,
                        "ms": round(took, 1),
                    }
                )
                # Undo what it wrote: every proposal meets the store the dream left.
                for path in (store / "topics").iterdir():
                    if path.name not in kept:
                        path.unlink()
                for file, content in kept.items():
                    (store / "topics" / file).write_bytes(content)
                (store / "MEMORY.md").write_bytes(index)
    mem.close()
    repeated = [o for o in outcomes if o["kind"] == "repeated"]
    new = [o for o in outcomes if o["kind"] == "new"]
    times = sorted(o["ms"] for o in outcomes)
    return {
        "system": name,
        "duplicates_added": sum(o["added"] for o in repeated),
        "duplicates_added_merged": sum(o["added"] for o in repeated if o["merged"]),
        "repeated": len(repeated),
        "new_kept": sum(o["added"] for o in new),
        "new": len(new),
        "extract_ms_p50": times[len(times) // 2],
        "outcomes": outcomes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    data = load(args.data)
    sets = {"repeated facts": data, "quarry changes": changed_set()}
    results = []
    with tempfile.TemporaryDirectory(prefix="memlane-dedupe-") as tmp:
        for name in args.systems.split(","):
            if name not in SYSTEMS:
                raise SystemExit(f"unknown system {name!r}: use {', '.join(SYSTEMS)}")
            for label, one in sets.items():
                result = run_system(name, one, Path(tmp))
                results.append({"set": label, **result})
                shutil.rmtree(Path(tmp) / name, ignore_errors=True)
    print(
        "| set | system | duplicates added (target 0) | of them merged by the dream | "
        "new facts kept (target all) | extraction p50 |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        dups = f"{r['duplicates_added']} / {r['repeated']}" if r["repeated"] else "–"
        merged = str(r["duplicates_added_merged"]) if r["repeated"] else "–"
        print(
            f"| {r['set']} | {r['system']} | {dups} | {merged} | "
            f"{r['new_kept']} / {r['new']} | {r['extract_ms_p50']:.0f} ms |"
        )
    for r in results:
        wrong = [o for o in r["outcomes"] if (o["kind"] == "repeated") == o["added"]]
        for o in wrong:
            what = "added again" if o["added"] else "dropped"
            print(f"  {r['set']} {r['system']} {o['id']} {what}: {o['reason'] or o['status']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
