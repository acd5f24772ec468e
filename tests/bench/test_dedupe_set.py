"""The repeated-facts set and its benchmark (benchmarks/quality/dedupe.py, issue 29).

The set's shape is checked without a model; its target (no restatement added,
every new fact kept, with the bundled model) by running the benchmark's own
code once on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"
sys.path.insert(0, str(BENCH))

from dedupe import changed_set, load, run_system  # noqa: E402


def test_the_set_holds_20_restatements_and_20_new_facts() -> None:
    data = load()
    entries = {f"{t['name'].lower()}/{title}" for t in data["topics"] for title, _ in t["entries"]}
    merged = {f"{t['slug']}/{e['title']}" for t in data["dream"]["topics"] for e in t["entries"]}
    assert len(data["repeated"]) == 20 and len(data["new"]) == 20
    assert sum(1 for r in data["repeated"] if r["merged"]) == 10
    for item in data["repeated"]:
        assert item["of"] in (merged if item["merged"] else entries | merged), item["id"]
    for item in data["new"]:
        assert item["near"] in entries | merged, item["id"]
    assert len(changed_set()["new"]) == 19


def test_no_restatement_is_added_and_every_new_fact_is_kept(tmp_path: Path) -> None:
    result = run_system("model", load(), tmp_path)
    wrong = [o for o in result["outcomes"] if (o["kind"] == "repeated") == o["added"]]
    assert wrong == []
    assert (result["duplicates_added"], result["new_kept"]) == (0, 20)
