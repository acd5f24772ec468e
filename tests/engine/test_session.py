"""The host-agnostic Session, driven through its API with no host (issue 4).

A scripted multi-session scenario over real files and a real SQLite index:
capture through memlane's OpenAI provider and a fake server on 127.0.0.1
(``fake_openai``: slow, erroring and silent models are its behaviours),
failure markers, snapshot stability and rollover (the fixed ``clock``),
auto-context within budget and deadline (the bundled model), shutdown flush
with a slow LLM. Deadlines are proven by what the call returned while the
server still held its answer, never by timing the call.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, IndexWriteLock, open_memory, start_session, wait_for
from memlane.core.types import Exchange
from memlane.engine.live.session import SHUTDOWN_REASON, Session
from memlane.engine.project import Memory
from memlane.engine.reports import render_status
from memlane.llm.base import LLM
from memlane.store.anchor import parse_anchor
from memlane.store.section import read_markdown

# A model that has not answered yet: the server holds its answer this long
# (leaving the fixture wakes it), far past any deadline under test.
SILENT_S = 60.0


def _session(mem: Memory, llm: LLM | None = None, **kw: object) -> Session:
    return start_session(mem, llm, **kw)


def _exchange(user: str, assistant: str, entry: str = "e1", **kw: object) -> Exchange:
    return Exchange(user=user, assistant=assistant, entry_id=entry, **kw)  # type: ignore[arg-type]


def _daily(mem: Memory, day: str = "2026-11-30") -> str:
    return read_markdown(mem.scope.store / f"{day}.md")


def _distils(server: FakeOpenAI) -> list[str]:
    """The prompts of the distillation requests (extraction asks the same server)."""
    return [r.prompt for r in server.requests if "Distil this exchange" in r.prompt]


# -- capture -----------------------------------------------------------------------------


def test_capture_writes_one_anchored_entry_and_indexes_it(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- the agent moved the hot cache to Redis with 5 minute TTLs")
    session = _session(memory, fake_openai.llm())
    queued = session.agent_settled(
        _exchange("move the cache to redis", "Done: Redis, TTL 5 min.", entry="ab12cd34")
    )
    assert queued.queued
    flush = session.shutdown()
    assert flush.flushed and flush.pending == 0
    assert "move the cache to redis" in _distils(fake_openai)[0]
    text = _daily(memory)
    assert "### 10:00" in text
    assert "- the agent moved the hot cache to Redis with 5 minute TTLs" in text
    anchor = parse_anchor(text)
    assert anchor is not None
    assert (anchor.session, anchor.turn, anchor.transcript) == (
        "sess-1",
        "ab12cd34",
        "/tmp/t/sess-1.jsonl",
    )
    hits = memory.search("redis cache ttl", 3, sync=False).hits
    assert hits and "Redis" in hits[0].content
    assert session.capture.distilled == 1 and session.capture.written == 1
    assert session.capture.llm == "openai/fake-model"


@pytest.mark.parametrize(
    ("exchange", "reason"),
    [
        (Exchange(user="hi", assistant="hello", aborted=True), "aborted"),
        (Exchange(user="hi", assistant="   "), "no text"),
        (Exchange(user="  ", assistant="hello"), "no user message"),
    ],
)
def test_gates_refuse_without_writing(
    memory: Memory, fake_openai: FakeOpenAI, exchange: Exchange, reason: str
) -> None:
    session = _session(memory, fake_openai.llm())
    queued = session.agent_settled(exchange)
    assert not queued.queued and reason in (queued.reason or "")
    session.shutdown()
    assert not memory.scope.store.exists() or not list(memory.scope.store.glob("*.md"))
    assert fake_openai.requests == []


def test_capture_off_writes_nothing(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_CAPTURE="off")
    session = _session(mem, fake_openai.llm())
    assert not session.agent_settled(_exchange("a", "b")).queued
    assert any("capture is off" in n for n in session.notices)
    session.shutdown()
    assert fake_openai.requests == []
    assert not mem.scope.store.exists() or not list(mem.scope.store.glob("*.md"))


def test_a_bad_setting_is_told_at_session_start_and_memory_stays_on(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    """Hooks have no terminal: the session's notices, which the host shows, name it."""
    mem = open_memory(project, clock=clock, MEMLANE_CAPTURE_ENABLED="sometimes")
    session = _session(mem, fake_openai.llm())
    assert session.capture.enabled
    assert (
        "$MEMLANE_CAPTURE_ENABLED: capture.enabled = 'sometimes' is not allowed: it must be "
        "true or false; capture.enabled stays true (default) until that is fixed"
    ) in session.notices
    session.shutdown()


def test_failed_distillation_still_writes_marker_and_digest(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(status=500, error_message="the model crashed")
    session = _session(memory, fake_openai.llm())
    session.agent_settled(_exchange("why does the build fail?", "The lockfile was stale."))
    session.shutdown()
    text = _daily(memory)
    assert f"- [distillation failed: HTTP 500 from {fake_openai.url}: the model crashed" in text
    assert "why does the build fail?" in text and "The lockfile was stale." in text
    assert session.capture.failed == 1


def test_timed_out_distillation_writes_marker(memory: Memory, fake_openai: FakeOpenAI) -> None:
    fake_openai.set(delay_s=SILENT_S)
    session = _session(memory, fake_openai.llm(), distill_timeout_ms=200)
    session.agent_settled(_exchange("slow one", "answer"))
    flush = session.shutdown()
    assert flush.flushed
    assert "- [distillation failed: timed out after 0.2 s" in _daily(memory)


def test_no_llm_writes_a_digest(memory: Memory) -> None:
    session = _session(memory, None)
    session.agent_settled(_exchange("what port does the api use?", "It listens on 8080."))
    session.shutdown()
    text = _daily(memory)
    assert "- [no distillation: no LLM configured]" in text
    assert "8080" in text


def test_secrets_never_reach_the_llm_or_the_store(memory: Memory, fake_openai: FakeOpenAI) -> None:
    session = _session(memory, fake_openai.llm())
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    url_password = "s3cr3t-Passw0rd"
    session.agent_settled(
        _exchange(
            f"use my token {token} and postgres://app:{url_password}@db:5432/x "
            "<private>my home address is 1 Elm St</private>",
            "ok",
        )
    )
    session.shutdown()
    seen = "\n".join(r.system + r.prompt for r in fake_openai.requests)
    assert "use my token" in seen  # the exchange was sent, redacted
    stored = _daily(memory)
    for secret in (token, url_password, "1 Elm St"):
        assert secret not in seen
        assert secret not in stored
    assert session.capture.redactions >= 3


def test_shutdown_with_a_slow_llm_writes_the_digest_within_the_cap(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    # Distillation would wait 30 s for this server and then write its own
    # timeout marker: the shutdown marker shows the cap cut it short.
    fake_openai.set(delay_s=SILENT_S)
    session = _session(memory, fake_openai.llm())
    session.agent_settled(_exchange("deploy to staging", "Deployed build 412 to staging."))
    wait_for(lambda: fake_openai.requests, what="the distillation request")
    flush = session.shutdown(cap_ms=600)
    assert flush.pending == 0
    text = _daily(memory)
    assert f"- [distillation failed: {SHUTDOWN_REASON}]" in text
    assert "Deployed build 412" in text
    assert text.count("### ") == 1  # written once, not again when the LLM returns


def test_a_burst_of_captures_costs_one_debounced_index(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    mem = open_memory(project, clock=clock, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="400")
    session = _session(mem, fake_openai.llm())
    session.internals.indexer.settle(10)
    runs_before = session.internals.indexer.state.runs
    for i in range(5):
        session.agent_settled(_exchange(f"question {i}", f"answer {i}", entry=f"e{i}"))
    wait_for(lambda: session.capture.written == 5, what="five entries written")
    # The debounced run comes on its own after the burst ...
    wait_for(
        lambda: session.internals.indexer.state.runs > runs_before, what="the debounced index run"
    )
    # ... and nothing else was left to run.
    assert session.internals.indexer.settle(10)
    assert session.internals.indexer.state.runs == runs_before + 1
    session.shutdown()


# -- snapshot ------------------------------------------------------------------------------


def test_snapshot_is_byte_stable_between_checkpoints_and_rebuilt_at_them(
    memory: Memory, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    clock.set(datetime(2026, 11, 30, 9, 0))
    memory.write("- yesterday the team chose SQLite", now=datetime(2026, 11, 29, 17, 0))
    memory.write("- this morning the agent fixed the flaky test", now=datetime(2026, 11, 30, 8, 0))
    session = _session(memory, fake_openai.llm())
    first = session.before_agent_start("hello").system_append
    assert "chose SQLite" in first and "fixed the flaky test" in first
    for i in range(20):
        session.agent_settled(_exchange(f"q{i}", f"a{i}", entry=f"x{i}"))
        memory.write(f"- tool write {i}", now=datetime(2026, 11, 30, 9, i))
    wait_for(lambda: session.capture.written == 20, what="twenty captures written")
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


def test_snapshot_tail_is_cut_at_entry_boundaries(memory: Memory) -> None:
    for i in range(60):
        memory.write(f"- entry number {i} " + "x" * 80, now=datetime(2026, 11, 30, 8, i))
    session = _session(memory, None, snapshot_today_chars=1000)
    text = session.snapshot.text
    today = text.split("### Today (2026-11-30)\n", 1)[1]
    assert today.startswith("[… earlier entries of this day omitted]\n### ")
    assert "entry number 59" in today and "entry number 0 " not in today
    assert len(today) <= 1000 + 60
    session.shutdown()


# -- auto-context ------------------------------------------------------------------------------


def _seeded(project: Path, clock: FixedClock, *, lexical: bool = False, **env: str) -> Memory:
    """Four older notes, indexed; auto-context on; the bundled model unless *lexical*."""
    mem = open_memory(
        project,
        clock=clock,
        lexical=lexical,
        MEMLANE_AUTO_CONTEXT="on",
        MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50",
        **env,
    )
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


def test_auto_context_injects_relevant_hits_within_budget(project: Path, clock: FixedClock) -> None:
    mem = _seeded(project, clock)
    session = _session(mem, None)
    assert session.internals.wait_auto_context_ready(30)
    injection = session.before_agent_start("why is the login test flaky? token refresh race")
    assert injection.message is not None
    assert "race in the token refresh" in injection.message
    assert len(injection.message) <= mem.config.session.auto_context_char_budget
    hit_hash = injection.message.splitlines()[2].split()[1]
    assert mem.expand(hit_hash).content  # the hash chains into memory_expand
    assert session.auto_context.injected == 1
    session.shutdown()


def test_auto_context_injects_nothing_below_the_floor(project: Path, clock: FixedClock) -> None:
    mem = _seeded(project, clock)
    session = _session(mem, None)
    assert session.internals.wait_auto_context_ready(30)
    injection = session.before_agent_start("quantum chromodynamics lattice gauge theory")
    assert injection.message is None
    assert session.auto_context.skippedEmpty == 1
    session.shutdown()


def test_auto_context_drops_chunks_already_in_the_snapshot(
    project: Path, clock: FixedClock
) -> None:
    mem = open_memory(project, clock=clock, lexical=False, MEMLANE_AUTO_CONTEXT="on")
    mem.write(
        "- the flaky login test was caused by a race in the token refresh",
        now=datetime(2026, 11, 30, 9, 0),
    )
    mem.sync()
    session = _session(mem, None)
    assert session.internals.wait_auto_context_ready(30)
    injection = session.before_agent_start("flaky login test token refresh race")
    assert injection.message is None  # today's entry is already in the snapshot
    assert session.auto_context.injected == 0
    session.shutdown()


def test_auto_context_deadline_misses_walk_the_respawn_cap(
    project: Path, clock: FixedClock
) -> None:
    mem = _seeded(project, clock)
    # A 0 ms cap: every search misses its deadline, whatever the machine.
    session = _session(mem, None, auto_context_cap_ms=0)
    assert session.internals.wait_auto_context_ready(30)
    assert _auto_context_row(session).startswith("on: top ")
    settings = session.settings
    prompts = 0
    for _round in range(settings.max_sidecar_respawns + 1):
        # Each respawned worker warms up first; then every search misses.
        assert session.internals.wait_auto_context_ready(30)
        for _ in range(settings.timeout_crash_threshold):
            assert session.before_agent_start(f"redis cache ttl {prompts}").message is None
            prompts += 1
    state = session.auto_context
    assert state.skippedBudget == prompts
    assert state.respawns == settings.max_sidecar_respawns
    assert not state.active and state.disabled_reason
    # The status header tells the truth: off for this session, and why.
    row = _auto_context_row(session)
    assert row.startswith("off for this session: ") and "missed the 0 ms deadline" in row
    assert any("auto-context is off for this session" in n for n in session.status().notices)
    errors_before = state.skippedError
    session.before_agent_start("one more")
    assert state.skippedBudget == prompts  # off: no more searches
    assert state.skippedError == errors_before + 1  # a given-up worker counts as an error
    session.shutdown()


def _auto_context_row(session: Session) -> str:
    """The value of memory_status's "auto-context" line."""
    lines = render_status(session.status()).splitlines()
    return next(line for line in lines if line.startswith("auto-context ")).split(None, 1)[1]


def test_a_prompt_during_a_respawn_counts_as_an_error(project: Path, clock: FixedClock) -> None:
    mem = _seeded(project, clock)
    session = _session(mem, None, auto_context_cap_ms=0)
    assert session.internals.wait_auto_context_ready(30)
    for i in range(session.settings.timeout_crash_threshold):
        session.before_agent_start(f"miss {i}")
    state = session.auto_context
    assert state.respawns == 1
    session.before_agent_start("right after the crash")  # the new worker is warming up
    assert state.skippedError == 1 and state.skippedWarming == 0
    session.shutdown()


def test_auto_context_is_off_by_default(memory: Memory) -> None:
    session = _session(memory, None)
    assert session.before_agent_start("anything").message is None
    assert not session.auto_context.enabled
    session.shutdown()


# -- scheduling and degradation ------------------------------------------------------------------


def test_a_locked_index_is_retried_on_the_backoff_delays(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane.index.sqlite.notes

    # SQLite's own busy wait absorbs short locks; shorten it so the lock
    # outlasts it and the scheduler's backoff has to take over.
    monkeypatch.setattr(memlane.index.sqlite.notes, "BUSY_TIMEOUT_S", 0.2)
    mem = _seeded(project, clock, lexical=True)
    mem.write("- a new note while the index is locked", now=datetime(2026, 11, 30, 9, 0))
    with IndexWriteLock(mem.internals.index_path) as lock:
        session = _session(mem, None, backoff_delays_ms=(300, 300, 300, 2000))
        # Released while the scheduler is still retrying (its delays add up to 2.9 s).
        release = threading.Timer(1.2, lock.release)
        release.start()
        assert session.internals.indexer.settle(20)
        release.join()
    assert session.internals.indexer.state.busy_retries >= 1
    assert session.internals.indexer.state.last_error is None
    session.shutdown()
    assert any("locked" in h.content for h in mem.search("index is locked", 3, sync=False).hits)


def test_without_an_embedder_capture_and_snapshot_still_work(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    # Embeddings pointed at a chat-only server: /v1/embeddings answers 404.
    mem = open_memory(
        project,
        clock=clock,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=fake_openai.base_url,
        MEMLANE_EMBEDDING_MODEL="nothing-here",
        MEMLANE_AUTO_CONTEXT="on",
        MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50",
    )
    fake_openai.set(answer="- the agent renamed the module")
    session = _session(mem, fake_openai.llm())
    session.agent_settled(_exchange("rename it", "renamed"))
    wait_for(lambda: session.capture.written == 1, what="the entry written")
    assert "renamed the module" in session.compacted()
    # Never raises; the one entry is already in the snapshot, so nothing is injected.
    assert session.before_agent_start("renamed module").message is None
    flush = session.shutdown()
    assert flush.pending == 0
    assert "renamed the module" in _daily(mem)


def test_sessions_in_sequence_share_the_daily_file(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    for number in range(3):
        # Extraction off: each session's one request is its distillation.
        mem = open_memory(project, clock=clock, MEMLANE_EXTRACT_MEMORIES_ENABLED="off")
        fake_openai.answer(f"- fact from session {number}")
        session = Session.start(
            mem,
            host="test",
            session_id=f"s{number}",
            llm=fake_openai.llm(),
            settings=mem.config.session,
        )
        session.agent_settled(_exchange("q", "a", entry=f"t{number}"))
        assert session.shutdown().flushed
        mem.close()
        clock.advance(minutes=5)
    text = _daily(open_memory(project, clock=clock))
    assert text.count("## Session") == 3
    for number in range(3):
        assert f"fact from session {number}" in text


# -- real providers over HTTP, chosen by the configuration -------------------------------------


def test_open_distils_through_an_openai_compatible_server(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="Here you go:\n1. The agent pinned numpy to 1.26.\n2. Tests passed.")
    mem = open_memory(
        project,
        clock=clock,
        MEMLANE_LLM_PROVIDER="openai",
        MEMLANE_LLM_BASE_URL=fake_openai.base_url,
        MEMLANE_LLM_MODEL="tiny-local",
    )
    session = Session.open(mem, host="test", session_id="s-http")
    session.agent_settled(_exchange("pin numpy please", "Pinned numpy==1.26; tests pass."))
    assert session.shutdown().flushed
    body = fake_openai.requests[0].body
    assert body["model"] == "tiny-local"
    assert "pin numpy please" in body["messages"][1]["content"]
    text = _daily(mem)
    assert "- The agent pinned numpy to 1.26." in text and "Here you go" not in text
    status = session.status()
    assert status.session is not None and status.session["capture"]["distilled"] == 1


def test_open_with_an_erroring_anthropic_server_writes_the_marker(
    project: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_llm import FakeAnthropic

    monkeypatch.setenv("TEST_FAKE_ANTHROPIC_KEY", "fake-key")
    with FakeAnthropic(status=529, error_message="Overloaded") as srv:
        mem = open_memory(
            project,
            clock=clock,
            MEMLANE_LLM_PROVIDER="anthropic",
            MEMLANE_LLM_BASE_URL=srv.base_url,
            MEMLANE_LLM_API_KEY="env:TEST_FAKE_ANTHROPIC_KEY",
        )
        session = Session.open(mem, host="test", session_id="s-anth")
        session.agent_settled(_exchange("what broke?", "The migration 0042 failed."))
        session.shutdown()
        assert srv.requests and srv.requests[0].headers.get("x-api-key") == "fake-key"
    text = _daily(mem)
    assert "- [distillation failed:" in text and "529" in text and "Overloaded" in text
    assert "The migration 0042 failed." in text


def test_open_uses_the_host_model_by_default(memory: Memory) -> None:
    asked: list[dict[str, object]] = []

    def host_call(params: dict[str, object], timeout_s: float) -> dict[str, object]:
        asked.append(params)
        return {"text": "- the agent answered through the host's cheapest model"}

    session = Session.open(memory, host="pi", session_id="s-host", host_call=host_call)
    session.agent_settled(_exchange("hi", "hello"))
    session.shutdown()
    assert asked and "model" not in asked[0]
    assert "through the host's cheapest model" in _daily(memory)


def test_open_without_host_or_provider_never_sends_anything(memory: Memory) -> None:
    session = Session.open(memory, host="cli", session_id="s-none")
    assert session.llm is None
    session.agent_settled(_exchange("q", "a"))
    session.shutdown()
    assert "[no distillation: no LLM configured]" in _daily(memory)


def test_an_unwritable_anchor_field_is_cleaned_not_lost(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(answer="- the agent answered")
    session = _session(memory, fake_openai.llm())
    session.agent_settled(_exchange("q", "a", entry="e2\ud83d"))
    flush = session.shutdown()
    assert flush.flushed and session.capture.written == 1
    anchor = parse_anchor(_daily(memory))
    assert anchor is not None and anchor.turn == "e2\ufffd"


def test_shutdown_digest_of_a_huge_exchange_stays_within_the_cap(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    fake_openai.set(delay_s=SILENT_S)
    session = _session(memory, fake_openai.llm())
    pasted_log = "INFO request served in 12 ms\n" * 40_000  # about 1 MB
    session.agent_settled(_exchange("why is this slow?\n" + pasted_log, "It is not."))
    # The documented fallback: the shutdown digest (of the exchange's start only),
    # written at once instead of waiting for the model.
    flush = session.shutdown(cap_ms=1500)
    assert flush.pending == 0
    text = _daily(memory)
    assert f"- [distillation failed: {SHUTDOWN_REASON}]" in text
    assert "- user asked: why is this slow? INFO request served in 12 ms" in text
    assert text.count("INFO request served") < 100  # a quote of the start, not the log


def test_a_failing_embedding_server_is_cached_as_down(project: Path, clock: FixedClock) -> None:
    # A server without an embeddings endpoint (404): an error that is not retried.
    with FakeOpenAI(embeddings=False) as chat_only:
        _a_failing_embedding_server_is_cached_as_down(project, clock, chat_only)


def _a_failing_embedding_server_is_cached_as_down(
    project: Path, clock: FixedClock, fake_openai: FakeOpenAI
) -> None:
    mem = open_memory(
        project,
        clock=clock,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=fake_openai.base_url,
        MEMLANE_EMBEDDING_MODEL="down",
    )
    mem.write("- the cache is redis", now=datetime(2026, 11, 30, 9, 0))
    first = mem.search("redis", 3)
    assert first.mode == "lexical" and any(
        "semantic search unavailable" in n for n in first.notices
    )
    assert fake_openai.requests and all(r.path == "/v1/embeddings" for r in fake_openai.requests)
    asked = len(fake_openai.requests)
    assert mem.embedding.embedder is None and mem.embedding.problem
    again = mem.search("redis", 3, sync=False)
    assert again.hits and again.mode == "lexical"
    assert len(fake_openai.requests) == asked  # no retry inside the negative cache
