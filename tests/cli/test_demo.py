"""The pieces of ``memlane demo``, in this process: its project and hybrid search on it.

The whole tour, as ``make demo`` runs it, is a smoke test (``test_smoke.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FixedClock
from memlane.cli.demo import build_project, fixtures_dir
from memlane.engine.project import Memory


def test_the_demo_project_holds_the_fixtures_as_its_store(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    assert (project / ".git").is_dir()
    store = project / ".memsearch" / "memory"
    shipped = sorted(p.name for p in (fixtures_dir() / "memory").glob("*.md"))
    assert len(shipped) > 1
    assert sorted(p.name for p in store.glob("*.md")) == shipped
    for name in shipped:
        assert (store / name).read_bytes() == (fixtures_dir() / "memory" / name).read_bytes()


def test_fixture_queries_find_their_entries_with_hybrid_search(
    tmp_path: Path, clock: FixedClock
) -> None:
    project = build_project(tmp_path)
    queries = json.loads((fixtures_dir() / "queries.json").read_text())
    assert queries
    with Memory.open(project, clock=clock) as mem:
        report = mem.sync()
        assert report.embedded_chunks == report.total_chunks > 0
        misses = []
        for q in queries:
            result = mem.search(q["query"], 3)
            assert result.mode == "hybrid"
            found = [(Path(h.source).name, h.heading) for h in result.hits]
            if (q["expect_file"], q["expect_heading"]) not in found:
                misses.append((q["query"], found))
        assert not misses, misses
