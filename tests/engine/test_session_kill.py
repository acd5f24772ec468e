"""kill -9 in the middle of a capture loses no entry written before it (issue 4)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import wait_for
from memlane.core.scope import resolve_scope
from memlane.store.chunker import chunk_markdown
from memlane.store.section import read_markdown

# A session whose LLM comes from the configuration (the fake server below),
# capturing six exchanges, then idling until it is killed.
_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from memlane.core.types import Exchange
    from memlane.engine.project import Memory
    from memlane.engine.live.session import Session

    mem = Memory.open(sys.argv[1])
    session = Session.open(mem, host="test", session_id="killed")
    for i in range(6):
        session.agent_settled(Exchange(user=f"q{i}", assistant=f"a{i}", entry_id=f"t{i}"))
    time.sleep(60)
    """
)


@pytest.mark.subprocess
def test_kill_during_capture_loses_no_written_entry(project: Path) -> None:
    # Five distillations answer at once; the sixth never does (until the
    # server stops): the process is killed while it waits for it.
    answers = [f"- fact number {n} was recorded" for n in range(1, 6)]
    with FakeOpenAI(answers=answers) as server:
        server.set(delay_s=60.0)
        env = {
            **os.environ,
            "MEMLANE_EMBEDDING_PROVIDER": "none",
            "MEMLANE_LLM_PROVIDER": "openai",
            "MEMLANE_LLM_BASE_URL": server.base_url,
            "MEMLANE_LLM_MODEL": "fake-model",
            # Only distillation is under test: each request is one exchange.
            "MEMLANE_EXTRACT_MEMORIES_ENABLED": "off",
        }
        proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(project)], env=env)
        try:
            # Capture is sequential: the sixth request follows the fifth entry.
            wait_for(lambda: len(server.requests) == 6, 60, "the sixth distillation request")
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(10) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
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
