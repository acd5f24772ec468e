"""The fault-injection harness: kill a real process at each step of a write path.

A scenario is a list of operations (``driver.py`` runs them in a child
process through memlane's real code) and a check. ``FaultHarness.steps``
runs it once with ``MEMLANE_FAULT_TRACE`` to learn every step it goes
through; ``FaultHarness.kill_at`` runs it again on a fresh copy of the
prepared project with ``MEMLANE_FAULT_KILL=<step>@<n>``, so the child dies by
SIGKILL at that exact moment, then runs the scenario's recovery operations
(what the user would run next: another command, the next session start) in
a new process, and the check asserts what the promise says: every write
acknowledged before the kill is there exactly once, every other write is
whole or absent, and the store, the index and the temporary files are in
order. ``Tally`` counts, per area, the kill points tried and held.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).resolve().parent / "driver.py"
# The moment every scenario's clock starts at (MEMLANE_NOW): dated files
# and headings are the same on every machine and every run.
SCENARIO_NOW = "2026-07-13T10:00:00+00:00"
DRIVER_TIMEOUT_S = 180.0

Op = dict[str, Any]


@dataclass(frozen=True)
class Run:
    """One driver process: the operations it acknowledged, and how it ended."""

    acks: tuple[str, ...]
    returncode: int
    trace: tuple[str, ...]
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL


@dataclass(frozen=True)
class KillPoint:
    step: str
    nth: int

    def __str__(self) -> str:
        return f"{self.step}@{self.nth}"


@dataclass(frozen=True)
class Scenario:
    """An area's operations, what runs after a kill, and what must then hold.

    ``check(project, run)`` gets the killed run (its acknowledgements) after
    ``recover`` ran, and raises AssertionError when a promise was broken.
    """

    area: str
    ops: Sequence[Op]
    check: Callable[[Path, Run], None]
    recover: Sequence[Op] = ()
    seed: Callable[[Path], None] | None = None  # files written before ``setup``
    setup: Sequence[Op] = ()  # operations run (unharmed) before ``ops``
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Tally:
    """Kill points tried and held, per area (the soak's report)."""

    tried: Counter[str] = field(default_factory=Counter)
    held: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, int, int]]:
        return [(area, self.tried[area], self.held[area]) for area in sorted(self.tried)]


class FaultHarness:
    """Runs scenarios in child processes below *workdir*."""

    def __init__(self, workdir: Path, base_env: Mapping[str, str]) -> None:
        self.workdir = workdir
        self.base_env = dict(base_env)
        self.runs = 0

    def fresh_project(self, scenario: Scenario) -> Path:
        """The scenario's project (and MEMLANE_HOME), seeded and set up.

        The prepared project is built once per scenario and copied back to
        the same place for every run, so absolute paths (the index keeps
        them) stay valid.
        """
        base = self.workdir / scenario.area
        work, template = base / "work", base / "template"
        project = work / "proj"
        if not template.exists():
            (project / ".git").mkdir(parents=True)
            (work / "home").mkdir()
            if scenario.seed is not None:
                scenario.seed(project)
            if scenario.setup:
                done = self.run(project, scenario, scenario.setup)
                if done.returncode != 0 or len(done.acks) != len(scenario.setup):
                    raise AssertionError(f"{scenario.area}: the setup failed:\n{done.stderr}")
            shutil.copytree(work, template, symlinks=True)
        else:
            shutil.rmtree(work)
            shutil.copytree(template, work, symlinks=True)
        return project

    def env_for(self, project: Path, scenario: Scenario) -> dict[str, str]:
        env = {**self.base_env, **scenario.env}
        env["MEMLANE_HOME"] = str(project.parent / "home")
        env.setdefault("MEMLANE_NOW", SCENARIO_NOW)
        env.setdefault("MEMLANE_EMBEDDING_PROVIDER", "none")
        # The agents' transcript directories live in the copied home too.
        env["PI_CODING_AGENT_DIR"] = str(project.parent / "home" / "pi-agent")
        env["CLAUDE_CONFIG_DIR"] = str(project.parent / "home" / "claude")
        return env

    def run(
        self,
        project: Path,
        scenario: Scenario,
        ops: Sequence[Op],
        *,
        kill: KillPoint | None = None,
        trace: bool = False,
        timeout_s: float = DRIVER_TIMEOUT_S,
    ) -> Run:
        self.runs += 1
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        acks = logs / f"acks-{self.runs}"
        trace_file = logs / f"trace-{self.runs}"
        env = self.env_for(project, scenario)
        env.pop("MEMLANE_FAULT_KILL", None)
        env.pop("MEMLANE_FAULT_TRACE", None)
        if kill is not None:
            env["MEMLANE_FAULT_KILL"] = str(kill)
        if trace:
            env["MEMLANE_FAULT_TRACE"] = str(trace_file)
        done = subprocess.run(
            [sys.executable, str(DRIVER), str(project), str(acks), json.dumps(list(ops))],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        return Run(
            acks=tuple(_lines(acks)),
            returncode=done.returncode,
            trace=tuple(_lines(trace_file)),
            stderr=done.stderr[-4000:],
        )

    def steps(self, scenario: Scenario, *, every: bool) -> list[KillPoint]:
        """The kill points of *scenario*: the first reach of each step, or
        (*every*) each reach of each step."""
        project = self.fresh_project(scenario)
        run = self.run(project, scenario, scenario.ops, trace=True)
        if run.returncode != 0:
            raise AssertionError(
                f"{scenario.area}: the scenario fails without a fault:\n{run.stderr}"
            )
        # The unharmed run must pass its own check too (the check can fail).
        self.recover_and_check(project, scenario, run)
        counts: Counter[str] = Counter()
        points: list[KillPoint] = []
        for name in run.trace:
            counts[name] += 1
            if every or counts[name] == 1:
                points.append(KillPoint(name, counts[name]))
        return points

    def kill_at(self, scenario: Scenario, point: KillPoint) -> Run:
        """Kill the scenario at *point*, recover, check; the killed run."""
        project = self.fresh_project(scenario)
        run = self.run(project, scenario, scenario.ops, kill=point)
        if not run.killed:
            raise AssertionError(
                f"{scenario.area}: expected a SIGKILL at {point}, the run ended with "
                f"{run.returncode}:\n{run.stderr}"
            )
        self.recover_and_check(project, scenario, run)
        return run

    def recover_and_check(self, project: Path, scenario: Scenario, run: Run) -> None:
        if scenario.recover:
            after = self.run(project, scenario, scenario.recover)
            if after.returncode != 0 or len(after.acks) != len(scenario.recover):
                raise AssertionError(
                    f"{scenario.area}: recovery after the fault failed "
                    f"(exit {after.returncode}, acknowledged {list(after.acks)}):\n{after.stderr}"
                )
        scenario.check(project, run)


def _lines(path: Path) -> Iterable[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if line]


def files_holding(roots: Iterable[Path], needle: str) -> list[Path]:
    """Every file below *roots* whose bytes contain *needle* (UTF-8)."""
    raw = needle.encode("utf-8")
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink() and raw in path.read_bytes():
                found.append(path)
    return found


def temp_leftovers(root: Path) -> list[Path]:
    """Temporary files of an interrupted write still lying around."""
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.name.endswith(".tmp")]
