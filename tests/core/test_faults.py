"""The fault steps: silent normally, a trace or a SIGKILL when asked (real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers import wait_for

SCRIPT = (
    "from memlane.core.faults import step\n"
    "for i in range(3):\n"
    "    step('demo.a'); step('demo.b')\n"
    "print('finished')\n"
)


def _run(extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**os.environ, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_steps_do_nothing_without_the_variables() -> None:
    done = _run({})
    assert done.returncode == 0 and done.stdout == "finished\n"


def test_trace_lists_every_step_reached(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    done = _run({"MEMLANE_FAULT_TRACE": str(trace)})
    assert done.returncode == 0
    assert trace.read_text().split() == ["demo.a", "demo.b"] * 3


def test_kill_at_the_nth_reach_of_a_step(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    done = _run({"MEMLANE_FAULT_TRACE": str(trace), "MEMLANE_FAULT_KILL": "demo.b@2"})
    assert done.returncode == -signal.SIGKILL and done.stdout == ""
    assert trace.read_text().split() == ["demo.a", "demo.b", "demo.a", "demo.b"]


PAUSING = (
    "import os, sys\n"
    "from memlane.core.faults import step\n"
    "step('demo.a')\n"
    "print(os.path.exists(os.environ['MEMLANE_FAULT_RESUME']), flush=True)\n"
)


def test_pause_holds_the_step_until_the_resume_file_exists(tmp_path: Path) -> None:
    trace, resume = tmp_path / "trace", tmp_path / "resume"
    env = {
        **os.environ,
        "MEMLANE_FAULT_TRACE": str(trace),
        "MEMLANE_FAULT_PAUSE": "demo.a",
        "MEMLANE_FAULT_RESUME": str(resume),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSING], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        # The step is traced, then held: the resume file is made only after that,
        # so the process finds it when the step returns only if the step waited.
        wait_for(
            lambda: proc.poll() is not None or (trace.exists() and trace.read_text() == "demo.a\n"),
            60,
            "the step traced",
        )
        assert proc.poll() is None, "the process ended instead of holding the step"
        resume.touch()
        assert proc.stdout.readline() == "True\n"
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
