"""``memlane demo`` and hybrid search with the real bundled model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.cli.demo import build_project, fixtures_dir
from memlane.engine.memory import Memory

pytestmark = pytest.mark.subprocess


def test_demo_runs_offline_and_explains_each_step(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memlane.cli.main", "demo"],
        env={**os.environ, "MEMLANE_HOME": str(tmp_path / "untouched")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for marker in ("1. A project", "2. Index it", "3. L1 recall", "4. L2 recall", "Session:"):
        assert marker in out.stdout
    assert "hybrid search" in out.stdout
    # The demo uses its own throwaway home, never the user's.
    assert not (tmp_path / "untouched").exists()


def test_fixture_queries_find_their_entries_with_hybrid_search(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    queries = json.loads((fixtures_dir() / "queries.json").read_text())
    with Memory.open(project) as mem:
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
