"""A short-lived ``memlane sidecar`` (``pi -p``) with the real bundled model, cold.

``pi -p`` starts a session, asks for one prompt's context and ends it within
a second or two: the bundled model is still loading all that time, on a
daemon thread inside onnxruntime (the GIL released).

- The prompt still gets its context: from the lexical leg while the model
  loads (docs/adr/0019), where it used to be skipped (``skippedWarming``).
- The process exits cleanly. Finalizing the interpreter under that thread
  used to abort it at exit with "terminate called without an active
  exception" (status -6), which pi printed on stderr.

The sidecar is run as a real process here, as pi runs it.
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


def _sidecar(project: Path) -> tuple[subprocess.Popen[bytes], Client]:
    env = {**os.environ, "MEMLANE_AUTO_CONTEXT": "on"}
    env.pop("MEMLANE_EMBEDDING_PROVIDER", None)  # the bundled model, loading for real
    proc = subprocess.Popen(
        [*MEMLANE, "sidecar", "-C", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    return proc, Client(proc.stdin, proc.stdout.fileno())


def test_the_first_prompt_gets_context_while_the_model_loads(tmp_path: Path) -> None:
    project = _indexed_project(tmp_path)
    proc, host = _sidecar(project)
    try:
        host.result("session_start", {"cwd": str(project), "session_id": "s1", "host": "pi"})
        injection = host.result(
            "before_agent_start",
            {"prompt": "why did Brightwater Studio get two paid renewal invoices?"},
        )
        status = host.result("tool", {"name": "memory_status", "arguments": {}})
        host.result("session_shutdown", {})
        host.close_input()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert injection["message"] is not None, status["text"]
    assert "INV-2026-10431" in injection["message"]["content"]
    counters = status["details"]["session"]["auto_context"]
    # Whether the model was warm by then or not, nothing was skipped for it.
    assert counters["injected"] == 1 and counters["skippedWarming"] == 0, counters
    assert "lexicalWhileWarming" in status["text"]


@pytest.mark.parametrize("prompt", [True, False], ids=["prompt", "no-prompt"])
def test_a_session_ended_during_the_model_load_exits_without_an_abort(
    tmp_path: Path, prompt: bool
) -> None:
    project = _indexed_project(tmp_path)
    proc, host = _sidecar(project)
    assert proc.stderr is not None
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
