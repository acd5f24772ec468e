"""The fault-injection suite (its ``--soak`` option is the root conftest's): ``make test`` runs its quick form (each step
killed at its first reach), ``make soak`` (``pytest tests/fault --soak``) the
long one (every reach of every step, and the 10k-capture soak); both print
the kill points tried and held per area."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import FaultHarness, Tally

_TALLY = Tally()
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@pytest.fixture(scope="session")
def soak(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--soak"))


@pytest.fixture
def harness(tmp_path: Path) -> FaultHarness:
    return FaultHarness(tmp_path, os.environ)


@pytest.fixture(scope="session")
def tally() -> Iterator[Tally]:
    yield _TALLY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    rows = _TALLY.rows()
    if not rows:
        return
    write = terminalreporter.write_line
    write("")
    write("fault injection: kill points tried / held per area")
    write(f"  {'area':<12} {'tried':>6} {'held':>6}")
    for area, tried, held in rows:
        write(f"  {area:<12} {tried:>6} {held:>6}")
    for note in _TALLY.notes:
        write(f"  {note}")
    for failure in _TALLY.failures:
        write(f"  broken: {failure}")
    if terminalreporter.config.getoption("--soak"):
        RESULTS.mkdir(parents=True, exist_ok=True)
        report = {
            "areas": {area: {"tried": t, "held": h} for area, t, h in rows},
            "failures": _TALLY.failures,
            "notes": _TALLY.notes,
        }
        (RESULTS / "fault_soak.json").write_text(json.dumps(report, indent=2) + "\n")
