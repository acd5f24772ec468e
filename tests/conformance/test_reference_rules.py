"""Reference rules that had no test of their own (docs/conformance.md maps them).

One test per rule of pi-memsearch's runtime documentation or
pi-memsearch-tools.txt, named after the rule. Real files, real SQLite
indexes, real store-command subprocesses; the engine is driven through its
public API (``Memory``, ``Session``, ``Tools``). Provider ``none`` (lexical)
wherever the rule does not need the model.
"""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeOpenAI
from helpers import FixedClock, open_memory
from memlane.core import settings as S
from memlane.core.config import load_config, set_trusted
from memlane.core.errors import NotFoundError, StoreError
from memlane.core.scope import collection_name, resolve_scope
from memlane.core.types import Anchor, Exchange
from memlane.engine.journal.maintenance import COMPACT_HEADING
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.tools.dispatch import Tools
from memlane.index.state import STATE_FILENAME
from memlane.llm.base import LLM
from memlane.store.anchor import parse_anchor
from memlane.store.section import read_markdown
from memlane.transcripts.locate import pi_session_dir_name

TODAY = datetime(2026, 11, 30, 10, 0)
DAY = "2026-11-30"


# -- helpers --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "none")


def _memory(directory: Path, **env: str) -> Memory:
    """A Memory whose config is the environment plus *env* (lexical unless *env*
    names a provider), on the suite's fixed clock."""
    return open_memory(directory, clock=FixedClock(TODAY), **env)


def _session(
    mem: Memory,
    llm: LLM | None = None,
    **overrides: Any,
) -> Session:
    return Session.start(
        mem,
        host="test",
        session_id="sess-conf",
        transcript_path="/tmp/conformance/sess-conf.jsonl",
        llm=llm,
        settings=replace(mem.config.session, **overrides),
    )


def _store_command(tmp_path: Path, body: str) -> str:
    script = tmp_path / "store-cmd.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _daily_file(store: Path, day: str, entries: list[tuple[str, str]]) -> Path:
    """A daily file written the way another mesh agent writes it."""
    store.mkdir(parents=True, exist_ok=True)
    path = store / f"{day}.md"
    body = [f"# {day}", "", "## Session 09:00"]
    for i, (hhmm, bullet) in enumerate(entries):
        body += [
            f"### {hhmm}",
            f"<!-- session:other-agent turn:t{i:07d} transcript:/tmp/other.jsonl -->",
            f"- {bullet}",
            "",
        ]
    path.write_text("\n".join(body))
    return path


def _pi_session(path: Path) -> dict[str, str]:
    """A small pi session file (v3): header, then an id/parentId chain."""
    start = datetime(2026, 8, 13, 14, 0, tzinfo=UTC)
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "019a-conf",
            "timestamp": start.isoformat().replace("+00:00", "Z"),
            "cwd": "/home/you/project",
        }
    ]
    ids: dict[str, str] = {}
    parent: str | None = None
    turns = [
        ("user", "which cache should the sessions service use?"),
        ("assistant", "Redis, with 5 minute TTLs, because Memcached lacks persistence."),
        ("user", "and the queue?"),
        ("assistant", "RabbitMQ stays."),
    ]
    for i, (role, text) in enumerate(turns):
        entry_id = f"a{i:07x}"
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        stamp = (start + timedelta(minutes=i + 1)).isoformat().replace("+00:00", "Z")
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": stamp,
                "message": {"role": role, "content": content, "timestamp": 0},
            }
        )
        ids[text] = entry_id
        parent = entry_id
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return ids


# -- Hook to action / Memory entries ---------------------------------------------------------


def test_session_start_catch_up_indexes_what_other_agents_wrote(project: Path) -> None:
    """session_start: indexer catch-up (runtime, "Hook to action")."""
    mem = _memory(project, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50")
    _daily_file(mem.scope.store, "2026-11-29", [("17:00", "the team picked zanzibar for queues")])
    assert mem.search("zanzibar", sync=False).hits == []  # nothing indexed yet
    session = _session(mem)
    assert session.internals.indexer.settle(20)
    hits = mem.search("zanzibar", sync=False).hits
    assert hits and "zanzibar" in hits[0].content
    session.shutdown()


def test_moving_a_repo_yields_a_new_collection_that_catch_up_fills(tmp_path: Path) -> None:
    """Collection name hashes the absolute path; the next catch-up indexes into the new one."""
    old = tmp_path / "before" / "proj"
    (old / ".git").mkdir(parents=True)
    with _memory(old) as mem:
        mem.write("the billing service moved to quokka-db", now=TODAY)
        mem.sync()
        old_collection, old_index = mem.scope.collection, mem.internals.index_path
    new = tmp_path / "after" / "proj"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    mem = _memory(new, MEMLANE_CAPTURE_INDEX_DEBOUNCE_MS="50")
    assert mem.scope.collection == collection_name(new) != old_collection
    assert mem.scope.collection.startswith("ms_proj_")
    assert not mem.internals.index_path.exists()
    session = _session(mem)
    assert session.internals.indexer.settle(20)
    assert mem.internals.index_path != old_index and mem.internals.index_path.exists()
    assert mem.search("quokka", sync=False).hits
    session.shutdown()


def test_project_config_layers_at_the_repository_directory(project: Path) -> None:
    """A project config file at the repository directory applies from any subdirectory."""
    (project / ".memlane.toml").write_text("[embedding]\nbatch_size = 4\n")
    set_trusted(project, True)
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    with Memory.open(sub) as mem:
        assert mem.scope.repository_dir == project.resolve()
        assert mem.config.embedding.batch_size == 4


def test_a_store_not_named_memory_works_everywhere_but_compact(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """Store command: a store not named memory is fine everywhere except memory_compact."""
    notes = tmp_path / "store-root" / "proj"
    cmd = _store_command(
        tmp_path,
        f'case "$1" in memory-dir) echo {notes};; collection) echo ms_notes_1234abcd;; '
        f"state-dir) echo {tmp_path / 'state'};; esac\n",
    )
    work = tmp_path / "work"
    work.mkdir()
    mem = _memory(work, MEMLANE_STORE_CMD=cmd)
    assert mem.scope.store == notes and mem.scope.collection == "ms_notes_1234abcd"
    tools = Tools(mem)
    tools.call("memory_write", {"text": "the ledger uses zanzibar ids"})
    tools.call("memory_write", {"text": "a second note to keep"})
    found = tools.call("memory_search", {"query": "zanzibar ledger"})
    chunk_hash = found.details["hits"][0]["chunk_hash"]
    assert "zanzibar" in tools.call("memory_expand", {"chunk_hash": chunk_hash}).text
    removed = tools.call("memory_forget", {"chunk_hash": chunk_hash})
    assert "zanzibar" in removed.text
    kept = "".join(p.read_text() for p in notes.glob("*.md"))
    assert "a second note to keep" in kept and "zanzibar" not in kept
    with pytest.raises(StoreError) as info:
        Tools(mem, _session(mem, fake_openai.llm())).call("memory_compact", {})
    assert str(notes) in info.value.message and "'proj'" in info.value.message
    assert fake_openai.requests == []  # refused before any LLM call


# -- Capture ------------------------------------------------------------------------------------


def test_failed_distillation_keeps_the_session_anchor_intact(
    project: Path, fake_openai: FakeOpenAI
) -> None:
    """A failed distillation writes a diagnostic marker with the session anchor intact."""
    mem = _memory(project)
    fake_openai.set(status=400, error_message="the model is not loaded")
    session = _session(mem, fake_openai.llm())
    queued = session.agent_settled(
        Exchange(user="why is ci red?", assistant="A stale lockfile.", entry_id="cd34ef56")
    )
    assert queued.queued
    session.shutdown()
    text = read_markdown(mem.scope.store / f"{DAY}.md")
    assert fake_openai.requests, "the distillation never reached the LLM"
    marker = next(line for line in text.splitlines() if "distillation failed" in line)
    assert marker.startswith("- [distillation failed: ") and marker.endswith("]")
    assert "the model is not loaded" in marker
    anchor = parse_anchor(text)
    assert anchor is not None
    assert (anchor.session, anchor.turn, anchor.transcript) == (
        "sess-conf",
        "cd34ef56",
        "/tmp/conformance/sess-conf.jsonl",
    )


# -- Recall ---------------------------------------------------------------------------------


def test_memory_search_returns_five_hits_by_default(project: Path) -> None:
    """L1: top-k scored chunks, default 5, each carrying a chunk hash."""
    mem = _memory(project)
    for i in range(8):
        mem.write(f"- zanzibar note number {i}", now=TODAY.replace(minute=i))
    result = Tools(mem).call("memory_search", {"query": "zanzibar note"})
    hits = result.details["hits"]
    assert len(hits) == 5
    assert all(len(h["chunk_hash"]) == 16 for h in hits)
    assert len(Tools(mem).call("memory_search", {"query": "zanzibar", "k": 7}).details["hits"]) == 7
    # R45: the result says what a score means (calibrated relevance, ADR 0010)
    assert "Scores estimate relevance in [0, 1]" in result.text


def test_memory_expand_loads_no_embedder(project: Path, tmp_path: Path) -> None:
    """L2: the full section and its anchor, with no embedder (cheap)."""
    with _memory(project) as writer:
        writer.write("the flaky test came from a shared sandbox account", now=TODAY)
        writer.sync()
        chunk_hash = writer.search("sandbox account").hits[0].chunk_hash
    # Now an embedder is configured, but broken: expansion must not need it.
    mem = _memory(
        project,
        MEMLANE_EMBEDDING_PROVIDER="onnx",
        MEMLANE_EMBEDDING_PATH=str(tmp_path / "no-model-here"),
        MEMLANE_EMBEDDING_MODEL="absent",
    )
    section = mem.expand(chunk_hash)
    assert "shared sandbox account" in section.content
    assert section.anchor is not None and section.anchor.session == "cli"
    # never even tried: loading the broken model would have recorded why it failed
    assert mem.embedding.problem is None


def test_memory_transcript_is_a_pure_file_read(
    project: Path, tmp_path: Path, isolated_home: Path
) -> None:
    """L3 never touches the backend: no index is opened or created, no embedder loaded."""
    # One of this project's pi sessions (an agent is shown no other transcript).
    sessions = isolated_home / "pi-agent" / "sessions" / pi_session_dir_name(str(project))
    sessions.mkdir(parents=True)
    transcript = sessions / "session.jsonl"
    ids = _pi_session(transcript)
    mem = _memory(
        project,
        MEMLANE_EMBEDDING_PROVIDER="onnx",
        MEMLANE_EMBEDDING_PATH=str(tmp_path / "no-model-here"),
        MEMLANE_EMBEDDING_MODEL="absent",
    )
    target = ids["Redis, with 5 minute TTLs, because Memcached lacks persistence."]
    result = Tools(mem).call(
        "memory_transcript", {"transcript_path": str(transcript), "turn": target}
    )
    assert "which cache should the sessions service use?" in result.text
    assert "Memcached lacks persistence" in result.text
    assert not mem.internals.index_path.exists()  # opening the index would have created it
    assert mem.embedding.problem is None  # loading the broken model would have failed


# -- Cross-repo recall -------------------------------------------------------------------------


def _scan_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    root = tmp_path / "roots"
    cur, other = root / "cur", root / "other"
    for directory, text in (
        (cur, "the current project keeps zanzibar notes locally"),
        (other, "the other project chose zanzibar for its queue"),
    ):
        (directory / ".git").mkdir(parents=True)
        with _memory(directory) as mem:
            mem.write(text, now=TODAY)
            mem.sync()
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    return cur, other


def test_default_recall_stays_project_scoped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without scope "all", memory_search never leaves the project, even with scan roots set."""
    cur, other = _scan_world(tmp_path, monkeypatch)
    tools = Tools(_memory(cur))
    own = tools.call("memory_search", {"query": "zanzibar", "k": 10})
    assert own.details["hits"]
    assert all("current project" in h["content"] for h in own.details["hits"])
    assert all(h.get("project") in (None, str(cur)) for h in own.details["hits"])
    assert "other project" not in own.text
    wide = tools.call("memory_search", {"query": "zanzibar", "k": 10, "scope": "all"})
    assert {h["project"] for h in wide.details["hits"]} == {str(cur), str(other)}


def test_memory_transcript_takes_a_cross_repo_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """project on memory_transcript: the hit's label, verbatim, through the same seam as expand."""
    cur, other = _scan_world(tmp_path, monkeypatch)
    transcript = tmp_path / "other-session.jsonl"
    ids = _pi_session(transcript)
    with _memory(other) as mem:  # the other project's memory anchors that transcript
        mem.write("the queue decision", Anchor("019a-conf", "a0000003", str(transcript)))
    tools = Tools(_memory(cur))
    hit = next(
        h
        for h in tools.call("memory_search", {"query": "zanzibar", "scope": "all"}).details["hits"]
        if h["project"] == str(other)
    )
    shown = tools.call(
        "memory_transcript",
        {
            "transcript_path": str(transcript),
            "turn": ids["and the queue?"],
            "project": hit["project"],
        },
    )
    assert "RabbitMQ stays." in shown.text
    # A label that is not a project fails the way memory_expand fails on it.
    for bad in ("relative/label", str(tmp_path / "no-such-project")):
        with pytest.raises(NotFoundError):
            tools.call(
                "memory_transcript",
                {"transcript_path": str(transcript), "turn": ids["and the queue?"], "project": bad},
            )
        with pytest.raises(NotFoundError):
            tools.call("memory_expand", {"chunk_hash": hit["chunk_hash"], "project": bad})


# -- Redaction and memory compaction ------------------------------------------------------------


def test_memory_forget_refreshes_the_stable_snapshot(project: Path) -> None:
    """A redaction rebuilds the snapshot, so the removed text cannot survive in the prompt."""
    mem = _memory(project)
    mem.write("the deploy password hint is zanzibarquokka", now=TODAY.replace(hour=8))
    mem.write("payments use stripe", now=TODAY.replace(hour=9))
    session = _session(mem)
    before = session.before_agent_start("hello").system_append
    assert "zanzibarquokka" in before
    assert session.internals.indexer.settle(20)
    tools = Tools(mem, session)
    chunk_hash = tools.call("memory_search", {"query": "zanzibarquokka"}).details["hits"][0][
        "chunk_hash"
    ]
    removed = tools.call("memory_forget", {"chunk_hash": chunk_hash})
    assert "zanzibarquokka" in removed.text  # the tool result is the only record
    after = session.before_agent_start("hello again").system_append
    assert "zanzibarquokka" not in after
    assert "payments use stripe" in after
    session.shutdown()


def test_memory_compact_does_not_refresh_the_stable_snapshot(
    project: Path, fake_openai: FakeOpenAI
) -> None:
    """memory_compact leaves the snapshot byte-identical, like a mid-session memory_write."""
    mem = _memory(project)
    mem.write("the hot cache moved to Redis", now=TODAY.replace(hour=8))
    fake_openai.answer("- compacted: Redis holds the hot cache")
    session = _session(mem, fake_openai.llm())
    before = session.before_agent_start("hello").system_append
    summary = Tools(mem, session).call("memory_compact", {}).text
    assert summary == "- compacted: Redis holds the hot cache"
    daily = (mem.scope.store / f"{DAY}.md").read_text()
    assert COMPACT_HEADING in daily and summary in daily
    assert session.before_agent_start("again").system_append == before
    assert summary in session.compacted()  # the next checkpoint picks it up
    session.shutdown()


def test_compact_refusal_comes_before_the_missing_llm(tmp_path: Path) -> None:
    """A store not named memory is refused, naming it, even when no LLM is configured."""
    notes = tmp_path / "store-root" / "proj"
    cmd = _store_command(
        tmp_path,
        f'case "$1" in memory-dir) echo {notes};; collection) echo ms_notes_1234abcd;; esac\n',
    )
    work = tmp_path / "work"
    work.mkdir()
    mem = _memory(work, MEMLANE_STORE_CMD=cmd, MEMLANE_LLM_PROVIDER="none")
    with pytest.raises(StoreError) as info:
        Tools(mem).call("memory_compact", {})
    assert str(notes) in info.value.message
    assert not mem.internals.index_path.exists()  # nothing was probed (opening creates it)
    assert not notes.exists()


def test_a_later_compact_regenerates_a_fresh_summary_after_forget(
    project: Path, fake_openai: FakeOpenAI
) -> None:
    """Forgetting a chunk inside a compact block redacts the whole block; a later compact
    writes a fresh one."""
    mem = _memory(project)
    mem.write("the hot cache moved to Redis", now=TODAY.replace(hour=8))
    tools = Tools(mem)
    fake_openai.answer("- first summary mentions zanzibar", "- second summary, fresh")
    llm = fake_openai.llm()
    from memlane.engine.journal.maintenance import compact

    mem.clock.set(TODAY.replace(hour=9))
    compact(mem, llm)
    block = tools.call("memory_search", {"query": "first summary zanzibar"}).details["hits"][0]
    removed = tools.call("memory_forget", {"chunk_hash": block["chunk_hash"]})
    assert removed.details["kind"] == "compact"
    path = mem.scope.store / f"{DAY}.md"
    assert "zanzibar" not in path.read_text() and COMPACT_HEADING not in path.read_text()
    mem.clock.set(TODAY.replace(hour=10))
    compact(mem, llm)
    text = path.read_text()
    assert text.count(COMPACT_HEADING) == 1 and "- second summary, fresh" in text
    prompts = fake_openai.prompts
    assert len(prompts) == 2 and "the hot cache moved to Redis" in prompts[1]
    assert "first summary" not in prompts[1]  # the forgotten block is not re-summarised


# -- Stable snapshot ------------------------------------------------------------------------------


def test_snapshot_is_usage_instructions_and_two_capped_day_tails(project: Path) -> None:
    """Usage instructions, today's tail (3000 chars), yesterday's tail (2000 chars)."""
    mem = _memory(project)
    yesterday = TODAY - timedelta(days=1)
    for i in range(40):
        mem.write(f"yesterday entry {i:02d} " + "y" * 90, now=yesterday.replace(hour=8, minute=i))
        mem.write(f"today entry {i:02d} " + "t" * 90, now=TODAY.replace(hour=8, minute=i))
    session = _session(mem)  # the reference's defaults
    text = session.before_agent_start("hi").system_append
    usage, rest = text.split("### Yesterday (2026-11-29)\n", 1)
    old, new = rest.split("### Today (2026-11-30)\n", 1)
    for tool in ("memory_search", "memory_expand", "memory_transcript", "memory_write"):
        assert tool in usage
    assert 1500 < len(old.strip()) <= S.SNAPSHOT_YESTERDAY_CHARS == 2000
    assert 2500 < len(new.strip()) <= S.SNAPSHOT_TODAY_CHARS == 3000
    assert "yesterday entry 39" in old and "yesterday entry 00" not in old
    assert "today entry 39" in new and "today entry 00" not in new
    session.shutdown()


# -- Auto-context -----------------------------------------------------------------------------------

PAST = datetime(2026, 11, 20, 9, 0)  # neither today nor yesterday: never in the snapshot


def _auto_session(mem: Memory, **overrides: Any) -> Session:
    # These tests are not about the deadline (R77 has its own): a generous cap
    # keeps them steady on a loaded machine.
    overrides.setdefault("auto_context_cap_ms", 5000)
    session = _session(mem, None, **overrides)
    assert session.internals.wait_auto_context_ready(30)
    return session


def _hashes(message: str) -> list[str]:
    """The chunk hashes of an injected message (memory_search's hit header lines)."""
    out = []
    for line in message.splitlines():
        parts = line.split()
        if len(parts) >= 3 and len(parts[1]) == 16 and parts[0].replace(".", "").isdigit():
            out.append(parts[1])
    return out


_PI_NAMES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "PI_MEMSEARCH_AUTO_CONTEXT": ("on", lambda c: c.session.auto_context_enabled),
    "PI_MEMSEARCH_CAPTURE": ("off", lambda c: not c.session.capture_enabled),
    "PI_MEMSEARCH_CAPTURE_MODEL": (
        "openai/gpt-4.1-nano",
        lambda c: c.llm.capture_model == "openai/gpt-4.1-nano",
    ),
    "PI_MEMSEARCH_SCAN_ROOTS": (
        "/srv/code",
        lambda c: c.get("cross_repo.scan_roots") == "/srv/code",
    ),
}


@pytest.mark.parametrize("name", list(_PI_NAMES))
def test_pi_memsearch_environment_names_are_accepted(name: str) -> None:
    """The reference's opt-ins (PI_MEMSEARCH_*) work unchanged."""
    env, read = _PI_NAMES[name]
    assert not read(load_config(None, env={}))
    assert read(load_config(None, env={name: env}))


def test_auto_context_injects_at_most_top_k_chunks(project: Path) -> None:
    """AUTO_CONTEXT_TOP_K = 3: chunks requested and injected at most."""
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    for i in range(6):
        mem.write(f"the zanzibar queue retries jobs, note {i}", now=PAST.replace(minute=i))
    mem.sync()
    floor = mem.config.session.auto_context_score_floor
    passing = [h for h in mem.search("zanzibar queue retries", 10).hits if h.score >= floor]
    assert len(passing) > 3  # more than three would clear the floor
    session = _auto_session(mem)
    message = session.before_agent_start("zanzibar queue retries").message
    assert message is not None
    assert len(_hashes(message)) == S.AUTO_CONTEXT_TOP_K == 3
    session.shutdown()


def test_auto_context_respects_the_character_budget(project: Path) -> None:
    """AUTO_CONTEXT_CHAR_BUDGET = 2000: total injected characters."""
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    for i in range(3):
        mem.write(
            f"the zanzibar queue retries jobs, note {i}: " + "detail " * 130,
            now=PAST.replace(minute=i),
        )
    mem.sync()
    hits = mem.search("zanzibar queue retries", 3).hits
    assert sum(len(h.content) for h in hits) > 2000  # the hits alone exceed the budget
    session = _auto_session(mem)
    message = session.before_agent_start("zanzibar queue retries").message
    assert message is not None and _hashes(message)
    assert len(message) <= S.AUTO_CONTEXT_CHAR_BUDGET == 2000
    session.shutdown()


def test_auto_context_query_is_the_prompt_cut_to_500_characters(project: Path) -> None:
    """AUTO_CONTEXT_QUERY_LIMIT = 500: the prompt is truncated before becoming the query."""
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    mem.write("the zanzibar queue retries failed jobs", now=PAST)
    mem.sync()
    filler = "q" * 600
    session = _auto_session(mem)
    assert session.before_agent_start(f"zanzibar queue {filler}").message is not None
    assert session.before_agent_start(f"{filler} zanzibar queue").message is None
    assert session.auto_context.skippedEmpty == 1
    session.shutdown()
    wider = _auto_session(mem, auto_context_query_limit=1000)
    assert wider.before_agent_start(f"{filler} zanzibar queue").message is not None
    wider.shutdown()


def test_auto_context_leaves_the_system_prompt_untouched(project: Path) -> None:
    """The injection is a separate message; the snapshot in the system prompt stays byte-stable."""
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    mem.write("the zanzibar queue retries failed jobs", now=PAST)
    mem.write("today the agent renamed the billing module", now=TODAY.replace(hour=8))
    mem.sync()
    session = _auto_session(mem)
    plain = _session(_memory(project), None)
    hit = session.before_agent_start("zanzibar queue")
    miss = session.before_agent_start("nothing relevant at all, xylophone")
    assert hit.message is not None and "zanzibar" in hit.message
    assert "zanzibar" not in hit.system_append
    assert hit.system_append == miss.system_append == plain.before_agent_start("x").system_append
    session.shutdown()
    plain.shutdown()


# -- Indexing and serialization: where the index state lives --------------------------------------


def _status_text(mem: Memory, session: Session | None = None) -> str:
    return Tools(mem, session).call("memory_status", {}).text


def _state_row(text: str) -> str:
    """The status report's "index state" row."""
    return next(line for line in text.splitlines() if line.startswith("index state"))


def test_index_state_is_written_where_the_state_dir_answer_says(tmp_path: Path) -> None:
    """A state-dir answer is where the state file is written and read (and what status prints)."""
    store = tmp_path / "stores" / "proj" / "memory"
    state_dir = tmp_path / "state-here"
    cmd = _store_command(
        tmp_path,
        f'case "$1" in memory-dir) echo {store};; collection) echo ms_p_0000beef;; '
        f"state-dir) echo {state_dir};; esac\n",
    )
    work = tmp_path / "work"
    work.mkdir()
    mem = _memory(work, MEMLANE_STORE_CMD=cmd)
    mem.write("an entry to index", now=TODAY)
    mem.sync()
    written = state_dir / STATE_FILENAME
    data = json.loads(written.read_text())
    assert data["status"] == "ok" and data["collection"] == "ms_p_0000beef"
    assert not (store.parent / STATE_FILENAME).exists()
    assert _state_row(_status_text(mem)).endswith(str(written))


def test_state_root_search_follows_symlinks_through_a_store_not_yet_created(
    tmp_path: Path,
) -> None:
    """The .memsearch component search follows symlinks, even through missing directories."""
    real_tree = tmp_path / "real" / ".memsearch"
    real_tree.mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real_tree)
    store = alias / "deep" / "nested" / "memory"  # does not exist yet
    cmd = _store_command(
        tmp_path,
        f'case "$1" in memory-dir) echo {store};; collection) echo ms_l_00000001;; '
        "state-dir) ;; esac\n",
    )
    scope = resolve_scope(tmp_path, env={"MEMLANE_STORE_CMD": cmd})
    assert scope.state_dir == real_tree  # the tree root, never the store's own parent
    assert scope.state_dir_note is None


def test_memory_status_prints_the_state_path_and_no_state_recorded_yet(project: Path) -> None:
    """memory_status prints the path it read; "no state recorded yet" resolves at the next index."""
    mem = _memory(project)
    mem.write("an entry", now=TODAY)
    before = _status_text(mem)
    path = project.resolve() / ".memsearch" / STATE_FILENAME
    assert _state_row(before).endswith(str(path))
    assert "index: no state recorded yet" in before
    mem.sync()
    after = _status_text(mem)
    assert _state_row(after).endswith(str(path))
    assert "no state recorded yet" not in after


@pytest.mark.parametrize("absent", ["none", "state-dir declined", "MEMSEARCH_DIR unset", "outside"])
def test_no_state_file_message_needs_every_condition(tmp_path: Path, absent: str) -> None:
    """ "no state file will be written" only when all three conditions hold; else a path."""
    outside = tmp_path / "stores" / "p" / "memory"
    inside = tmp_path / "tree" / ".memsearch" / "memory"
    store = inside if absent == "outside" else outside
    state_mode = f"echo {tmp_path / 'sd'}" if absent == "state-dir declined" else ""
    cmd = _store_command(
        tmp_path,
        f'case "$1" in memory-dir) echo {store};; collection) echo ms_s_00000002;; '
        f"state-dir) {state_mode} ;; esac\n",
    )
    env = {"MEMLANE_STORE_CMD": cmd}
    if absent == "MEMSEARCH_DIR unset":
        env["MEMSEARCH_DIR"] = str(tmp_path / "msdir")
    work = tmp_path / "work"
    work.mkdir()
    row = _state_row(_status_text(_memory(work, **env)))
    if absent == "none":
        assert "index: no state file will be written" in row
        for condition in ("declined state-dir", "MEMSEARCH_DIR is unset", "outside any .memsearch"):
            assert condition in row
    else:
        assert "no state file will be written" not in row
        assert row.rstrip().endswith(STATE_FILENAME)


# -- Degradation and the doctor -------------------------------------------------------------------------


def test_memory_status_reports_damaged_lines_and_auto_context_counters(project: Path) -> None:
    """memory_status: index state with per-file problems (here a line that is not UTF-8,
    which the index leaves out: ADR 0002), chunk count, auto-context counters."""
    mem = _memory(project, MEMLANE_AUTO_CONTEXT="on")
    mem.write("the zanzibar queue retries failed jobs", now=PAST)
    (mem.scope.store / "2026-11-01.md").write_bytes(b"# 2026-11-01\n\n- caf\xe9 in latin-1\n")
    mem.sync()
    session = _auto_session(mem)
    session.before_agent_start("zanzibar queue")
    session.before_agent_start("xylophone")
    assert session.internals.indexer.settle(20)  # the catch-up index has recorded its state
    text = _status_text(mem, session)
    rows = {
        key: value.strip()
        for key, sep, value in (line.partition("  ") for line in text.splitlines())
        if sep
    }
    assert rows["index status"] == "degraded"
    assert "2026-11-01.md:3: not valid UTF-8 (byte 0xe9" in rows["damaged line"]
    # the damaged file is indexed too: without its one line it has no chunk left
    assert rows["chunks"].startswith("1 in 2 files")
    row = next(line for line in text.splitlines() if line.startswith("auto-context counts"))
    assert "injected 1" in row and "skippedEmpty 1" in row
    assert "skippedBudget 0" in row and "skippedError 0" in row
    session.shutdown()


def test_writes_while_the_embedder_was_down_are_searchable_after_the_next_index(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the backend is back, the next index makes everything written meanwhile searchable."""
    # A server that cannot embed (404, an error memlane does not retry): the
    # backend is down for this memory, without waiting out a retry backoff.
    with FakeOpenAI(embeddings=False) as chat_only:
        down = _memory(
            project,
            MEMLANE_EMBEDDING_PROVIDER="openai",
            MEMLANE_EMBEDDING_BASE_URL=chat_only.base_url,
            MEMLANE_EMBEDDING_MODEL=S.BUNDLED_MODEL_NAME,
        )
        down.write("the payment test flaked because of a shared sandbox account", now=TODAY)
        result = down.search("sandbox account")  # still answers: lexical, with a notice
        assert result.mode == "lexical" and result.hits
        assert any("semantic search unavailable" in n for n in result.notices)
        assert chat_only.requests and down.index.stats()["vectors"] == 0
        down.close()
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "onnx")
    back = _memory(project, MEMLANE_EMBEDDING_PROVIDER="onnx")
    back.sync()
    assert back.index.stats()["vectors"] == back.index.stats()["chunks"] == 1
    semantic = back.search("why did the billing check fail intermittently", mode="semantic")
    assert semantic.mode == "semantic" and "sandbox account" in semantic.hits[0].content
    back.close()


# -- Constants ------------------------------------------------------------------------------------------


# The reference's constants (runtime: "Auto-context", "Indexing and serialization"; docs/session.md).
_CONSTANTS: dict[str, object] = {
    "SNAPSHOT_TODAY_CHARS": 3000,
    "SNAPSHOT_YESTERDAY_CHARS": 2000,
    "INDEX_DEBOUNCE_MS": 5000,
    "SHUTDOWN_CAP_MS": 15000,
    "AUTO_CONTEXT_TOP_K": 3,
    "AUTO_CONTEXT_CHAR_BUDGET": 2000,
    "AUTO_CONTEXT_CAP_MS": 300,
    "AUTO_CONTEXT_QUERY_LIMIT": 500,
    "TIMEOUT_CRASH_THRESHOLD": 3,
    "MAX_SIDECAR_RESPAWNS": 2,
    "SHUTDOWN_GRACE_MS": 2000,
    "BACKOFF_DELAYS_MS": (200, 500, 1000, 2000),
    "SEARCH_TOP_K": 5,
}


@pytest.mark.parametrize("name", list(_CONSTANTS))
def test_reference_constants_are_the_defaults(name: str) -> None:
    """Every constant the reference names has its value as memlane's default setting."""
    value = _CONSTANTS[name]
    assert getattr(S, name) == value
    defaults = load_config(None, env={}).session
    assert getattr(defaults, name.lower()) == value
