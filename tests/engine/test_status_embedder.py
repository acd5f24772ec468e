"""memory_status tells the truth about the embedder it reports on (issue 29).

With the embedding endpoint down, search fell back to words and said so, but
memory_status answered "embedder ready": once the retry time had passed, the
next load made a new embedder object (which needs no network) and status
took the object for a working model. Now status reports the last real call's
failure until a call succeeds, and an endpoint no call has reached yet is
probed with one bounded connect. Real HTTP servers on 127.0.0.1, no mocks.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

import memlane.engine.shared.embedding as embedding_module
from fake_embedding import FakeEmbeddings, Reply
from helpers import FixedClock, open_memory
from memlane.engine.project import Memory
from memlane.engine.tools.dispatch import Tools


@pytest.fixture
def dead_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _memory(project: Path, clock: FixedClock, base_url: str) -> Memory:
    return open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=base_url,
        MEMLANE_EMBEDDING_MODEL="fake-embed",
        MEMLANE_LLM_PROVIDER="none",
    )


@pytest.fixture
def dead(project: Path, clock: FixedClock, dead_port: int) -> Iterator[Memory]:
    mem = _memory(project, clock, f"http://127.0.0.1:{dead_port}/v1")
    yield mem
    mem.close()


def _embedder_line(mem: Memory) -> str:
    text = Tools(mem).call("memory_status").text
    return next(line for line in text.splitlines() if " — embedder " in line)


def test_a_dead_endpoint_no_call_has_reached_is_reported_unreachable(dead: Memory) -> None:
    line = _embedder_line(dead)
    assert "embedder unavailable: cannot reach the embedding endpoint http://127.0.0.1:" in line
    assert any(m.startswith("embedder: cannot reach") for m in dead.status().missing)


def test_status_keeps_the_last_real_failure_after_the_embedder_is_made_again(
    dead: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead.write("Deploys go through the blue/green switch.")
    searched = Tools(dead).call("memory_search", {"query": "deploys", "min_score": 0})
    assert "semantic search unavailable" in searched.text
    # Past the retry time the next load makes a new embedder object: the index
    # run below does, and its own embedding fails again (the old "ready" path).
    monkeypatch.setattr(embedding_module, "EMBEDDER_RETRY_S", 0.0)
    dead.write("The hot cache runs on Redis.")
    dead.sync()
    assert dead.internals.parts.embedder_state.embedder is not None
    line = _embedder_line(dead)
    assert "embedder ready" not in line
    assert "embedder unavailable: embedding request to http://127.0.0.1:" in line


def test_an_endpoint_that_recovers_is_ready_again_after_its_first_good_call(
    project: Path,
    clock: FixedClock,
    fake_embeddings: FakeEmbeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mem = _memory(project, clock, fake_embeddings.base_url)
    try:
        mem.write("Deploys go through the blue/green switch.")
        fake_embeddings.then(*[Reply(status=503)] * 100)  # down: every request fails
        Tools(mem).call("memory_search", {"query": "deploys", "min_score": 0})
        assert "embedder unavailable: embedding request to" in _embedder_line(mem)
        monkeypatch.setattr(embedding_module, "EMBEDDER_RETRY_S", 0.0)
        fake_embeddings.script.clear()
        Tools(mem).call("memory_search", {"query": "deploys", "min_score": 0})
        assert _embedder_line(mem).endswith("embedder ready")
    finally:
        mem.close()
