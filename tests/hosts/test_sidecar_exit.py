"""A short-lived ``memlane sidecar`` exits cleanly while the model still loads.

``pi -p`` starts a session, asks for one prompt's context and ends it within
a second or two: the bundled model is then still loading on a daemon thread
(inside onnxruntime, the GIL released). Finalizing the interpreter under
that thread used to abort the process at exit with "terminate called
without an active exception" (status -6), which pi printed on stderr. The
sidecar is run as a real process here, as pi runs it, with the real model.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_sidecar import Client

from helpers import MEMLANE

pytestmark = pytest.mark.subprocess

ABORT_LINE = "terminate called"


def _indexed_project(root: Path) -> Path:
    from memlane.cli.demo import build_project  # a few weeks of the demo's memory

    project = build_project(root)
    done = subprocess.run(
        [*MEMLANE, "-C", str(project), "index"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return project


@pytest.mark.parametrize("prompt", [True, False], ids=["prompt", "no-prompt"])
def test_a_session_ended_during_the_model_load_exits_without_an_abort(
    tmp_path: Path, prompt: bool
) -> None:
    project = _indexed_project(tmp_path)
    env = {**os.environ, "MEMLANE_AUTO_CONTEXT": "on"}
    env.pop("MEMLANE_EMBEDDING_PROVIDER", None)  # the bundled model, loading for real
    proc = subprocess.Popen(
        [*MEMLANE, "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    host = Client(proc.stdin, proc.stdout.fileno())
    try:
        host.result("session_start", {"cwd": str(project), "session_id": "s1", "host": "pi"})
        if prompt:
            host.result("before_agent_start", {"prompt": "which kafka client did we pin?"})
        assert host.result("session_shutdown", {})["flushed"] is True
        host.close_input()
        code = proc.wait(timeout=60)
        stderr = proc.stderr.read().decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert ABORT_LINE not in stderr, stderr
    assert code == 0, stderr
