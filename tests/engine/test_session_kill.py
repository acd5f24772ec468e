"""kill -9 in the middle of a capture loses no entry written before it (issue 4)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memlane.core.scope import resolve_scope
from memlane.store.chunker import chunk_markdown
from memlane.store.section import read_markdown

_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from memlane.core.types import Exchange
    from memlane.engine.memory import Memory
    from memlane.engine.session import Session

    class SlowAfter:
        name = "scripted/slow"
        def __init__(self):
            self.calls = 0
        def complete(self, system, prompt, *, max_tokens=800, timeout_s=None):
            self.calls += 1
            if self.calls > 5:
                print("distilling-slowly", flush=True)
                time.sleep(60)
            return f"- fact number {self.calls} was recorded"

    mem = Memory.open(sys.argv[1])
    session = Session.start(mem, host="test", session_id="killed", llm=SlowAfter())
    for i in range(6):
        session.agent_settled(Exchange(user=f"q{i}", assistant=f"a{i}", entry_id=f"t{i}"))
    time.sleep(60)
    """
)


@pytest.mark.subprocess
def test_kill_during_capture_loses_no_written_entry(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    # Extraction off: this LLM counts its calls, and only distillation is under test.
    env = {
        **os.environ,
        "MEMLANE_EMBEDDING_PROVIDER": "none",
        "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(project)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "distilling-slowly"
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = resolve_scope(project).store
    files = list(store.glob("*.md"))
    assert len(files) == 1
    text = read_markdown(files[0])
    for n in range(1, 6):
        assert f"- fact number {n} was recorded" in text
    assert text.count("### ") == 5  # whole entries only, nothing torn
    assert text.endswith("\n")
    chunks = chunk_markdown(text, str(files[0]), "m")
    assert len([c for c in chunks if "fact number" in c.content]) == 5
