"""The host-agnostic Session, driven through its API with no host (issue 4).

A scripted multi-session scenario over real files, a real SQLite index and
the bundled model: capture with a fake LLM, failure markers, snapshot
stability and rollover (injectable clock), auto-context within budget and
deadline, shutdown flush with a slow LLM.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from helpers import NOW, FixedClock
from memlane.core.config import load_config
from memlane.core.errors import LlmError
from memlane.core.types import Exchange
from memlane.engine.memory import Memory
from memlane.engine.session import SHUTDOWN_REASON, Session
from memlane.store.anchor import parse_anchor
from memlane.store.section import read_markdown


class ScriptedLLM:
    """An in-process LLM: answers, fails or hangs as told, records prompts."""

    def __init__(self, answer: str = "- the user and the agent fixed the cache") -> None:
        self.answer = answer
        self.delay_s = 0.0
        self.error: str | None = None
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return "scripted/test"

    def complete(
        self, system: str, prompt: str, *, max_tokens: int = 800, timeout_s: float | None = None
    ) -> str:
        self.prompts.append(prompt)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.error:
            raise LlmError(self.error)
        return self.answer


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def _memory(project: Path, clock: FixedClock | None = None, **env: str) -> Memory:
    config = load_config(None, env={"MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS": "50", **env})
    from memlane.core.scope import resolve_scope

    return Memory(resolve_scope(project), config, clock=clock or FixedClock(NOW))


def _session(mem: Memory, llm: object = None, **kw: object) -> Session:
    settings = replace(mem.config.session, **kw)  # type: ignore[arg-type]
    return Session.start(
        mem,
        host="test",
        session_id="sess-1",
        transcript_path="/tmp/t/sess-1.jsonl",
        llm=llm,  # type: ignore[arg-type]
        settings=settings,
    )


def _exchange(user: str, assistant: str, entry: str = "e1", **kw: object) -> Exchange:
    return Exchange(user=user, assistant=assistant, entry_id=entry, **kw)  # type: ignore[arg-type]


def _wait(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def _daily(mem: Memory, day: str = "2026-11-30") -> str:
    return read_markdown(mem.scope.store / f"{day}.md")


# -- capture -----------------------------------------------------------------------------


def test_capture_writes_one_anchored_entry_and_indexes_it(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM("- the agent moved the hot cache to Redis with 5 minute TTLs")
    session = _session(mem, llm)
    queued = session.agent_settled(
        _exchange("move the cache to redis", "Done: Redis, TTL 5 min.", entry="ab12cd34")
    )
    assert queued.queued
    flush = session.shutdown()
    assert flush.flushed and flush.pending == 0
    text = _daily(mem)
    assert "### 10:00" in text
    assert "- the agent moved the hot cache to Redis with 5 minute TTLs" in text
    anchor = parse_anchor(text)
    assert anchor is not None
    assert (anchor.session, anchor.turn, anchor.transcript) == (
        "sess-1",
        "ab12cd34",
        "/tmp/t/sess-1.jsonl",
    )
    hits = mem.search("redis cache ttl", 3, sync=False).hits
    assert hits and "Redis" in hits[0].content
    assert session.capture.distilled == 1 and session.capture.written == 1


@pytest.mark.parametrize(
    ("exchange", "reason"),
    [
        (Exchange(user="hi", assistant="hello", aborted=True), "aborted"),
        (Exchange(user="hi", assistant="   "), "no text"),
        (Exchange(user="  ", assistant="hello"), "no user message"),
    ],
)
def test_gates_refuse_without_writing(project: Path, exchange: Exchange, reason: str) -> None:
    mem = _memory(project)
    session = _session(mem, ScriptedLLM())
    queued = session.agent_settled(exchange)
    assert not queued.queued and reason in (queued.reason or "")
    session.shutdown()
    assert not mem.scope.store.exists() or not list(mem.scope.store.glob("*.md"))


def test_capture_off_writes_nothing(project: Path) -> None:
    mem = _memory(project, MEMLANE_CAPTURE="off")
    session = _session(mem, ScriptedLLM())
    assert not session.agent_settled(_exchange("a", "b")).queued
    assert any("capture is off" in n for n in session.notices)
    session.shutdown()


def test_failed_distillation_still_writes_marker_and_digest(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM()
    llm.error = "HTTP 500 from http://127.0.0.1:1/v1/chat/completions"
    session = _session(mem, llm)
    session.agent_settled(_exchange("why does the build fail?", "The lockfile was stale."))
    session.shutdown()
    text = _daily(mem)
    assert "- [distillation failed: HTTP 500 from" in text
    assert "why does the build fail?" in text and "The lockfile was stale." in text
    assert session.capture.failed == 1


def test_timed_out_distillation_writes_marker(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM()
    llm.delay_s = 3.0
    session = _session(mem, llm, distill_timeout_ms=200)
    session.agent_settled(_exchange("slow one", "answer"))
    flush = session.shutdown()
    assert flush.flushed
    assert "- [distillation failed: timed out after 0.2 s]" in _daily(mem)


def test_no_llm_writes_a_digest(project: Path) -> None:
    mem = _memory(project)
    session = _session(mem, None)
    session.agent_settled(_exchange("what port does the api use?", "It listens on 8080."))
    session.shutdown()
    text = _daily(mem)
    assert "- [no distillation: no LLM configured]" in text
    assert "8080" in text


def test_secrets_never_reach_the_llm_or_the_store(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM()
    session = _session(mem, llm, distill_timeout_ms=200)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    url_password = "s3cr3t-Passw0rd"
    session.agent_settled(
        _exchange(
            f"use my token {token} and postgres://app:{url_password}@db:5432/x "
            "<private>my home address is 1 Elm St</private>",
            "ok",
        )
    )
    llm.delay_s = 0
    session.shutdown()
    seen = "\n".join(llm.prompts)
    stored = _daily(mem)
    for secret in (token, url_password, "1 Elm St"):
        assert secret not in seen
        assert secret not in stored
    assert session.capture.redactions >= 3


def test_shutdown_with_a_slow_llm_writes_the_digest_within_the_cap(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM()
    llm.delay_s = 30.0
    session = _session(mem, llm)
    session.agent_settled(_exchange("deploy to staging", "Deployed build 412 to staging."))
    started = time.monotonic()
    flush = session.shutdown(cap_ms=1500)
    assert time.monotonic() - started < 3.0
    assert flush.pending == 0
    text = _daily(mem)
    assert f"- [distillation failed: {SHUTDOWN_REASON}]" in text
    assert "Deployed build 412" in text
    assert text.count("### ") == 1  # written once, not again when the LLM returns


def test_a_burst_of_captures_costs_one_debounced_index(project: Path) -> None:
    mem = _memory(project, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="400")
    session = _session(mem, ScriptedLLM())
    session.indexer.settle(10)
    runs_before = session.indexer.state.runs
    for i in range(5):
        session.agent_settled(_exchange(f"question {i}", f"answer {i}", entry=f"e{i}"))
    _wait(lambda: session.capture.written == 5)
    _wait(lambda: session.indexer.state.runs > runs_before and not session.indexer.state.pending)
    time.sleep(0.6)
    assert session.indexer.state.runs == runs_before + 1
    session.shutdown()


# -- snapshot ------------------------------------------------------------------------------


def test_snapshot_is_byte_stable_between_checkpoints_and_rebuilt_at_them(project: Path) -> None:
    clock = FixedClock(datetime(2026, 11, 30, 9, 0))
    mem = _memory(project, clock)
    mem.write("- yesterday the team chose SQLite", now=datetime(2026, 11, 29, 17, 0))
    mem.write("- this morning the agent fixed the flaky test", now=datetime(2026, 11, 30, 8, 0))
    session = _session(mem, ScriptedLLM())
    first = session.before_agent_start("hello").system_append
    assert "chose SQLite" in first and "fixed the flaky test" in first
    for i in range(20):
        session.agent_settled(_exchange(f"q{i}", f"a{i}", entry=f"x{i}"))
        mem.write(f"- tool write {i}", now=datetime(2026, 11, 30, 9, i))
    _wait(lambda: session.capture.written == 20)
    for _ in range(3):
        assert session.before_agent_start("again").system_append == first  # byte-identical
    compacted = session.compacted()
    assert compacted != first and "tool write 19" in compacted
    assert session.before_agent_start("x").system_append == compacted
    clock.set(datetime(2026, 12, 1, 0, 5))  # local midnight passed
    rolled = session.before_agent_start("next day").system_append
    assert rolled != compacted
    assert "Yesterday (2026-11-30)" in rolled and "chose SQLite" not in rolled
    session.shutdown()


def test_snapshot_tail_is_cut_at_entry_boundaries(project: Path) -> None:
    mem = _memory(project)
    for i in range(60):
        mem.write(f"- entry number {i} " + "x" * 80, now=datetime(2026, 11, 30, 8, i))
    session = _session(mem, None, snapshot_today_chars=1000)
    text = session.snapshot.text
    today = text.split("### Today (2026-11-30)\n", 1)[1]
    assert today.startswith("[… earlier entries of this day omitted]\n### ")
    assert "entry number 59" in today and "entry number 0 " not in today
    assert len(today) <= 1000 + 60
    session.shutdown()


# -- auto-context ------------------------------------------------------------------------------


def _seeded(project: Path, **env: str) -> Memory:
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on", **env)
    notes = [
        "- the team moved the session cache to Redis with 5 minute TTLs",
        "- the deploy script needs AWS_PROFILE=staging before running",
        "- the flaky login test was caused by a race in the token refresh",
        "- the user prefers pytest fixtures over setUp methods",
    ]
    for i, note in enumerate(notes):
        mem.write(note, now=datetime(2026, 11, 20, 9, i))
    mem.sync()
    return mem


def test_auto_context_injects_relevant_hits_within_budget(project: Path) -> None:
    mem = _seeded(project)
    session = _session(mem, None)
    assert session.wait_auto_context_ready(30)
    injection = session.before_agent_start("why is the login test flaky? token refresh race")
    assert injection.message is not None
    assert "race in the token refresh" in injection.message
    assert len(injection.message) <= mem.config.session.auto_context_char_budget
    hit_hash = injection.message.splitlines()[2].split()[1]
    assert mem.expand(hit_hash).content  # the hash chains into memory_expand
    assert session.auto_context.injected == 1
    session.shutdown()


def test_auto_context_injects_nothing_below_the_floor(project: Path) -> None:
    mem = _seeded(project)
    session = _session(mem, None)
    assert session.wait_auto_context_ready(30)
    injection = session.before_agent_start("quantum chromodynamics lattice gauge theory")
    assert injection.message is None
    assert session.auto_context.skippedEmpty == 1
    session.shutdown()


def test_auto_context_drops_chunks_already_in_the_snapshot(project: Path) -> None:
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    mem.write(
        "- the flaky login test was caused by a race in the token refresh",
        now=datetime(2026, 11, 30, 9, 0),
    )
    mem.sync()
    session = _session(mem, None)
    assert session.wait_auto_context_ready(30)
    injection = session.before_agent_start("flaky login test token refresh race")
    assert injection.message is None  # today's entry is already in the snapshot
    session.shutdown()


def test_auto_context_deadline_misses_walk_the_respawn_cap(project: Path) -> None:
    mem = _seeded(project)
    session = _session(mem, None, auto_context_cap_ms=0)
    assert session.wait_auto_context_ready(30)
    settings = session.settings
    prompts = 0
    for _round in range(settings.max_sidecar_respawns + 1):
        # Each respawned worker warms up first; then every search misses.
        assert session.wait_auto_context_ready(30)
        for _ in range(settings.timeout_crash_threshold):
            started = time.monotonic()
            assert session.before_agent_start(f"redis cache ttl {prompts}").message is None
            assert time.monotonic() - started < 0.5
            prompts += 1
    state = session.auto_context
    assert state.skippedBudget == prompts
    assert state.respawns == settings.max_sidecar_respawns
    assert not state.active and state.disabled_reason
    errors_before = state.skippedError
    session.before_agent_start("one more")
    assert state.skippedBudget == prompts  # off: no more searches
    assert state.skippedError == errors_before + 1  # a given-up worker counts as an error
    session.shutdown()


def test_a_prompt_during_a_respawn_counts_as_an_error(project: Path) -> None:
    mem = _seeded(project)
    session = _session(mem, None, auto_context_cap_ms=0)
    assert session.wait_auto_context_ready(30)
    for i in range(session.settings.timeout_crash_threshold):
        session.before_agent_start(f"miss {i}")
    state = session.auto_context
    assert state.respawns == 1
    session.before_agent_start("right after the crash")  # the new worker is warming up
    assert state.skippedError == 1 and state.skippedWarming == 0
    session.shutdown()


def test_auto_context_is_off_by_default(project: Path) -> None:
    mem = _memory(project)
    session = _session(mem, None)
    assert session.before_agent_start("anything").message is None
    assert not session.auto_context.enabled
    session.shutdown()


# -- scheduling and degradation ------------------------------------------------------------------


def test_a_locked_index_is_retried_on_the_backoff_delays(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import memlane.index.sqlite

    # SQLite's own busy wait absorbs short locks; shorten it so the lock
    # outlasts it and the scheduler's backoff has to take over.
    monkeypatch.setattr(memlane.index.sqlite, "BUSY_TIMEOUT_S", 0.2)
    mem = _seeded(project)
    mem.write("- a new note while the index is locked", now=datetime(2026, 11, 30, 9, 0))
    blocker = sqlite3.connect(mem.index_path, timeout=0.1, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    session = _session(mem, None, backoff_delays_ms=(300, 300, 300, 2000))
    release = threading.Timer(1.2, blocker.rollback)
    release.start()
    assert session.indexer.settle(20)
    release.join()
    blocker.close()
    assert session.indexer.state.busy_retries >= 1
    assert session.indexer.state.last_error is None
    session.shutdown()
    assert any("locked" in h.content for h in mem.search("index is locked", 3, sync=False).hits)


def test_without_an_embedder_capture_and_snapshot_still_work(project: Path) -> None:
    mem = _memory(
        project,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL="http://127.0.0.1:9/v1",
        MEMLANE_EMBEDDING_MODEL="nothing-here",
        MEMLANE_AUTO_CONTEXT="on",
    )
    session = _session(mem, ScriptedLLM("- the agent renamed the module"))
    session.agent_settled(_exchange("rename it", "renamed"))
    _wait(lambda: session.capture.written == 1)
    assert "renamed the module" in session.compacted()
    session.before_agent_start("renamed module")  # never raises, injects nothing
    flush = session.shutdown()
    assert flush.pending == 0
    assert "renamed the module" in _daily(mem)


def test_sessions_in_sequence_share_the_daily_file(project: Path) -> None:
    clock = FixedClock(datetime(2026, 11, 30, 10, 0))
    for number in range(3):
        mem = _memory(project, clock)
        session = Session.start(
            mem,
            host="test",
            session_id=f"s{number}",
            llm=ScriptedLLM(f"- fact from session {number}"),
            settings=mem.config.session,
        )
        session.agent_settled(_exchange("q", "a", entry=f"t{number}"))
        assert session.shutdown().flushed
        mem.close()
        clock.advance(minutes=5)
    text = _daily(_memory(project))
    assert text.count("## Session") == 3
    for number in range(3):
        assert f"fact from session {number}" in text


# -- real providers over HTTP (fake servers on 127.0.0.1) --------------------------------------


def test_open_distils_through_an_openai_compatible_server(project: Path) -> None:
    from fake_llm import FakeOpenAI

    with FakeOpenAI(
        answer="Here you go:\n1. The agent pinned numpy to 1.26.\n2. Tests passed."
    ) as srv:
        mem = _memory(
            project,
            MEMLANE_LLM_PROVIDER="openai",
            MEMLANE_LLM_BASE_URL=srv.base_url,
            MEMLANE_LLM_MODEL="tiny-local",
        )
        session = Session.open(mem, host="test", session_id="s-http")
        session.agent_settled(_exchange("pin numpy please", "Pinned numpy==1.26; tests pass."))
        assert session.shutdown().flushed
        body = srv.requests[0].body
    assert body["model"] == "tiny-local"
    assert "pin numpy please" in body["messages"][1]["content"]
    text = _daily(mem)
    assert "- The agent pinned numpy to 1.26." in text and "Here you go" not in text
    status = session.status()
    assert status.session is not None and status.session["capture"]["distilled"] == 1


def test_open_with_an_erroring_anthropic_server_writes_the_marker(project: Path) -> None:
    from fake_llm import FakeAnthropic

    with FakeAnthropic(status=529, error_message="Overloaded") as srv:
        mem = _memory(
            project,
            MEMLANE_LLM_PROVIDER="anthropic",
            MEMLANE_LLM_BASE_URL=srv.base_url,
            MEMLANE_LLM_API_KEY="env:TEST_FAKE_ANTHROPIC_KEY",
        )
        import os

        os.environ["TEST_FAKE_ANTHROPIC_KEY"] = "fake-key"
        try:
            session = Session.open(mem, host="test", session_id="s-anth")
            session.agent_settled(_exchange("what broke?", "The migration 0042 failed."))
            session.shutdown()
        finally:
            del os.environ["TEST_FAKE_ANTHROPIC_KEY"]
    text = _daily(mem)
    assert "- [distillation failed:" in text and "529" in text
    assert "The migration 0042 failed." in text


def test_open_uses_the_host_model_by_default(project: Path) -> None:
    asked: list[dict[str, object]] = []

    def host_call(params: dict[str, object], timeout_s: float) -> dict[str, object]:
        asked.append(params)
        return {"text": "- the agent answered through the host's cheapest model"}

    mem = _memory(project)
    session = Session.open(mem, host="pi", session_id="s-host", host_call=host_call)  # type: ignore[arg-type]
    session.agent_settled(_exchange("hi", "hello"))
    session.shutdown()
    assert asked and "model" not in asked[0]
    assert "through the host's cheapest model" in _daily(mem)


def test_open_without_host_or_provider_never_sends_anything(project: Path) -> None:
    mem = _memory(project)
    session = Session.open(mem, host="cli", session_id="s-none")
    assert session.llm is None
    session.agent_settled(_exchange("q", "a"))
    session.shutdown()
    assert "[no distillation: no LLM configured]" in _daily(mem)


def test_an_unwritable_anchor_field_is_cleaned_not_lost(project: Path) -> None:
    mem = _memory(project)
    session = _session(mem, ScriptedLLM("- the agent answered"))
    session.agent_settled(_exchange("q", "a", entry="e2\ud83d"))
    flush = session.shutdown()
    assert flush.flushed and session.capture.written == 1
    anchor = parse_anchor(_daily(mem))
    assert anchor is not None and anchor.turn == "e2\ufffd"


def test_shutdown_digest_of_a_huge_exchange_stays_within_the_cap(project: Path) -> None:
    mem = _memory(project)
    llm = ScriptedLLM()
    llm.delay_s = 30.0
    session = _session(mem, llm)
    pasted_log = "INFO request served in 12 ms\n" * 40_000  # about 1 MB
    session.agent_settled(_exchange("why is this slow?\n" + pasted_log, "It is not."))
    started = time.monotonic()
    flush = session.shutdown(cap_ms=1500)
    assert time.monotonic() - started < 5.0
    assert flush.pending == 0
    assert "why is this slow?" in _daily(mem)


def test_a_failing_embedding_server_is_cached_as_down(project: Path) -> None:
    from fake_llm import closed_port_url

    mem = _memory(
        project,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=closed_port_url(),
        MEMLANE_EMBEDDING_MODEL="down",
    )
    mem.write("- the cache is redis", now=datetime(2026, 11, 30, 9, 0))
    first = mem.search("redis", 3)
    assert first.mode == "lexical" and any(
        "semantic search unavailable" in n for n in first.notices
    )
    assert mem.embedder is None and mem.embedder_problem  # no retry inside the negative cache
    assert mem.search("redis", 3, sync=False).hits
