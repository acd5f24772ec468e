"""What docs/benchmarks.md says about the test suite stays true as the suite grows.

Its "Test suite" table gives how many tests each lane holds; those counts
drift with every test added. This collects the lanes as ``make test`` and
``make test-dates`` run them and holds the table to within a tenth of what
is collected now (the walls beside them are measured, by
``benchmarks/bench_suite.py`` or a clean-clone run, and dated there).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_DOC = ROOT / "docs" / "benchmarks.md"
FAST_LANE = "not e2e and not parity and not subprocess"
#: How far the documented count may lag what is collected.
TOLERANCE = 0.10

pytestmark = pytest.mark.subprocess


def collected(marker: str | None) -> int:
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    if marker is not None:
        command += ["-m", marker]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    summary = done.stdout.strip().splitlines()[-1]
    found = re.match(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", summary)
    assert found, f"pytest --collect-only said: {summary}\n{done.stderr[-2000:]}"
    return int(found.group(1))


def documented(label: str) -> int:
    """The count in the "Test suite" table's row whose first cell starts with *label*."""
    text = BENCHMARKS_DOC.read_text(encoding="utf-8")
    section = text.split("## Test suite", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith(label):
            return int(cells[1].replace(",", ""))
    raise AssertionError(f"docs/benchmarks.md's Test suite table has no row {label!r}")


@pytest.mark.parametrize(("label", "marker"), [("fast", FAST_LANE), ("every test", None)])
def test_the_documented_test_counts_are_the_suites(label: str, marker: str | None) -> None:
    actual, said = collected(marker), documented(label)
    assert abs(said - actual) <= TOLERANCE * actual, (
        f"docs/benchmarks.md says the {label} lane holds {said} tests; {actual} are "
        "collected now: measure again (benchmarks/bench_suite.py) and update the table"
    )
