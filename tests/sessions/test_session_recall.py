"""The sessions layer wired into the tools and the Session: kind session/all,
memory_similar, the primer and heuristic auto-recall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fixtures import ClaudeSession, PiSession, Project, chat
from jsonschema import Draft202012Validator

from helpers import Cli, FixedClock, open_memory, wait_for
from memlane.core.errors import MemlaneError
from memlane.engine.live.session import Session
from memlane.engine.sessions.layer import SessionsLayer
from memlane.engine.sessions.primer import (
    primer,
    recall_query,
    refers_to_the_past,
    render_recall,
)
from memlane.engine.shared.tool_outputs import output_schema
from memlane.engine.tools.dispatch import Tools


def _past_session(agent_project: Project) -> Path:
    session = PiSession(session_id="older-session")
    session.user("why does the redis cache evict keys so early?")
    session.assistant("Because maxmemory-policy was allkeys-lru with a 64mb cap; we raised it.")
    chat(session, 3, topic="billing export")
    path = agent_project.pi_file()
    session.write(path)
    return path


def test_kind_session_and_all_through_the_tool_layer(
    agent_project: Project, clock: FixedClock
) -> None:
    _past_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    mem.write("- the team chose redis for the session cache")
    SessionsLayer(mem).backfill()
    tools = Tools(mem)
    found = tools.call("memory_search", {"query": "redis maxmemory policy", "kind": "session"})
    hit = found.details["hits"][0]
    assert "allkeys-lru" in hit["content"] and "memory_transcript" in found.text
    both = tools.call("memory_search", {"query": "redis", "kind": "all", "k": 10})
    contents = " ".join(h["content"] for h in both.details["hits"])
    assert "session cache" in contents and "evict keys so early" in contents
    with pytest.raises(MemlaneError, match="one of them at a time"):
        tools.call("memory_search", {"query": "x", "kind": "session", "scope": "all"})


def test_memory_similar_on_a_session_message_and_on_a_chunk(
    agent_project: Project, clock: FixedClock
) -> None:
    _past_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    mem.write("- billing export runs nightly at 02:00")
    mem.write("- billing export writes CSV files to the s3 bucket")
    mem.sync()
    layer = SessionsLayer(mem)
    layer.backfill()
    tools = Tools(mem)
    session_hit = tools.call("memory_search", {"query": "billing export", "kind": "session"})
    key = session_hit.details["hits"][0]["chunk_hash"]
    similar = tools.call("memory_similar", {"chunk_hash": key, "k": 3})
    assert similar.details["hits"] and all(h["chunk_hash"] != key for h in similar.details["hits"])
    chunk = tools.call("memory_search", {"query": "nightly 02:00", "mode": "lexical"})
    chunk_hash = chunk.details["hits"][0]["chunk_hash"]
    near = tools.call("memory_similar", {"chunk_hash": chunk_hash})
    assert near.details["mode"] == "lexical"  # provider none: the chunk has no vector
    neighbours = near.details["hits"]
    assert neighbours and all(h["chunk_hash"] != chunk_hash for h in neighbours)
    assert "writes CSV files to the s3 bucket" in neighbours[0]["content"]
    with pytest.raises(MemlaneError, match="nothing stored under"):
        tools.call("memory_similar", {"chunk_hash": "0123456789abcdef"})


def test_primer_is_in_the_snapshot_and_tells_the_user(
    agent_project: Project, clock: FixedClock
) -> None:
    _past_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    SessionsLayer(mem).backfill()
    session = Session.start(mem, host="test", session_id="new-session", llm=None)
    text = session.snapshot.text
    assert "## Project memory" in text and "redis cache evict" in text
    assert any(n.startswith("[memory] 1 prior session; last on ") for n in session.notices)
    session.shutdown()


def test_primer_stays_within_its_token_budget() -> None:
    class Info:
        def __init__(self, i: int) -> None:
            self.first_user = f"session {i} " + "words " * 60
            self.last_summary = None
            self.last_at = f"2026-11-2{i % 9}T10:00:00Z"
            self.messages = 10

    block, line = primer([Info(i) for i in range(20)], 300)
    assert block is not None and len(block) <= 300 * 4
    assert line is not None and line.startswith("[memory] 20 prior sessions")


# "Like last time" and its kin in every language docs/sessions.md names for
# auto-recall: each phrase starts a prompt; the recall searches for the rest.
RECALL_PHRASES: dict[str, tuple[str, ...]] = {
    "English": ("Like last time", "Remember how", "As we discussed", "Last week"),
    "French": ("Comme la dernière fois", "Tu te souviens", "On a parlé de", "Hier"),
    "German": ("Wie beim letzten Mal", "Wie letztes Mal", "Weißt du noch", "Erinnerst du dich"),
    "Spanish": ("Como la última vez", "¿Recuerdas", "Como antes", "Ayer"),
    "Portuguese": ("Como da última vez", "Lembra", "Como antes", "Ontem"),
    "Italian": ("Come l'ultima volta", "Come l’ultima volta", "Ricordi", "Ieri"),
    "Dutch": ("Zoals de vorige keer", "Weet je nog", "Herinner je je", "Gisteren"),
    "Russian": ("Как в прошлый раз", "Помнишь", "Мы обсуждали", "Вчера"),
    "Chinese": ("像上次一样", "记得", "我们讨论过"),
    "Japanese": ("前回と同じく", "覚えてる", "この前"),
    "Korean": ("지난번처럼", "저번처럼", "기억나"),
}
TOPIC = "redis cache evicted keys so early"


def _documented_recall_languages() -> list[str]:
    docs = Path(__file__).resolve().parents[2] / "docs" / "sessions.md"
    text = " ".join(docs.read_text(encoding="utf-8").split())
    listed = text.split('"did we ever" …), in ', 1)[1].split(" (", 1)[0]
    return [name.strip() for name in listed.replace(" and ", ", ").split(",") if name.strip()]


def test_the_phrase_table_covers_every_documented_language() -> None:
    assert sorted(_documented_recall_languages()) == sorted(RECALL_PHRASES)


@pytest.mark.parametrize(
    ("language", "phrase"),
    [(lang, phrase) for lang, phrases in RECALL_PHRASES.items() for phrase in phrases],
)
def test_each_recall_phrase_triggers_and_leaves_the_topic_to_search(
    language: str, phrase: str
) -> None:
    prompt = f"{phrase}: {TOPIC}"
    assert refers_to_the_past(prompt), language
    query = recall_query(prompt)
    # The words that point at the past are gone (glue such as "how" may stay).
    assert query.endswith(TOPIC) and len(query) < len(prompt) and not refers_to_the_past(query)
    assert refers_to_the_past(phrase), language  # alone too


def test_a_prompt_that_is_only_the_phrase_searches_for_itself() -> None:
    assert recall_query("remember?") == "remember?"
    assert recall_query("add a unit test for the parser") == "add a unit test for the parser"


def test_every_language_s_phrase_brings_a_recall_block(
    agent_project: Project, clock: FixedClock
) -> None:
    """Through a session, as a host calls it: German's "Wie beim letzten Mal"
    gets its ## Recall block as the French one does."""
    _past_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    session = Session.start(mem, host="test", session_id="new-session", llm=None)
    wait_for(lambda: session.internals.sessions_layer is not None, 20, "the sessions layer opened")
    assert session.internals.wait_auto_context_ready(30)
    layer = session.internals.sessions_layer
    assert layer is not None
    wait_for(lambda: layer.store.stats().get("documents"), 20, "the catch-up backfill")
    missing = []
    for language, phrases in RECALL_PHRASES.items():
        message = session.before_agent_start(f"{phrases[0]}: {TOPIC}").message
        if message is None or "evict keys so early" not in message:
            missing.append(language)
    session.shutdown()
    assert missing == []
    assert session.recall.injected == len(RECALL_PHRASES)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("remember how we fixed the redis eviction?", True),
        ("do it like last time", True),
        ("what did we decide about billing last week", True),
        ("on en a parlé la semaine dernière", True),
        ("wie letztes Mal bitte", True),
        ("¿recuerdas el fallo de redis?", True),
        ("上次的缓存问题怎么解决的", True),
        ("前回の修正を見せて", True),
        ("add a unit test for the parser", False),
        ("rename the function to snake_case", False),
    ],
)
def test_heuristic_auto_recall_trigger(prompt: str, expected: bool) -> None:
    assert refers_to_the_past(prompt) is expected


def test_auto_recall_injects_past_messages_within_budget(
    agent_project: Project, clock: FixedClock
) -> None:
    _past_session(agent_project)
    mem = open_memory(agent_project.root, clock=clock)
    session = Session.start(mem, host="test", session_id="new-session", llm=None)
    wait_for(lambda: session.internals.sessions_layer is not None, 20, "the sessions layer opened")
    assert session.internals.wait_auto_context_ready(30)
    layer = session.internals.sessions_layer
    assert layer is not None
    wait_for(lambda: layer.store.stats().get("documents"), 20, "the catch-up backfill")
    message = session.before_agent_start(
        "remember why the redis cache evicted keys so early?"
    ).message
    assert message is not None and "## Recall" in message and "evict keys so early" in message
    budget = mem.config.sessions.auto_recall_token_budget * 4
    recall_part = message[message.index("## Recall") :]
    assert len(recall_part) <= budget
    assert session.before_agent_start("add a unit test for the parser").message is None
    assert session.recall.injected == 1
    session.shutdown()


def test_render_recall_is_empty_without_hits() -> None:
    assert render_recall([], 600) == ""


def test_cli_search_kind_session_catches_up_first(agent_project: Project, cli: Cli) -> None:
    _past_session(agent_project)
    out = cli("search", "redis evict", "--kind", "session", "--json")
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)["hits"]
    assert hits and "evict keys so early" in hits[0]["content"]
    assert "new session message" in out.stderr  # indexed before searching
    both = cli("search", "billing export", "--kind", "all", "--json")
    assert both.returncode == 0 and json.loads(both.stdout)["hits"]
    again = cli("sessions", "search", "redis evict")
    assert again.returncode == 0 and "evict keys so early" in again.stdout


def test_a_session_hit_shows_its_turn_not_a_line_range(
    agent_project: Project, clock: FixedClock
) -> None:
    cc = ClaudeSession("cc-lines")
    _, answer = cc.turn_21("why is the ledger on postgres?", "Postgres has the row locks we need.")
    path = cc.write(agent_project.claude_file("cc-lines.jsonl"))
    mem = open_memory(agent_project.root, clock=clock)
    SessionsLayer(mem).backfill()
    found = Tools(mem).call("memory_search", {"query": "row locks postgres", "kind": "session"})
    hit = found.details["hits"][0]
    assert hit["source"] == str(path) and f"turn:{answer}" in hit["heading"]
    assert (hit["turn"], hit["session"]) == (answer, "cc-lines")
    assert "start_line" not in hit  # a message has no line range
    line = next(ln for ln in found.text.splitlines() if hit["chunk_hash"] in ln)
    assert f"turn:{answer}" in line and ":0-0" not in found.text
    assert line.split()[2] == str(path)  # the transcript itself, no line range after it
    assert Draft202012Validator(output_schema("memory_search")).is_valid(found.details)
    assert "memory_transcript(transcript_path=source, turn)" in found.details["next"]
    similar = Tools(mem).call("memory_similar", {"chunk_hash": hit["chunk_hash"]})
    assert Draft202012Validator(output_schema("memory_similar")).is_valid(similar.details)


def test_auto_recall_answers_from_the_lexical_leg_while_the_model_loads(
    agent_project: Project, clock: FixedClock
) -> None:
    """The model is an endpoint that holds every embedding request (docs/adr/0019)."""
    from fake_llm import FakeOpenAI

    _past_session(agent_project)
    with FakeOpenAI() as server:
        env = {
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_BASE_URL": server.base_url,
            "MEMLANE_EMBEDDING_MODEL": "fake-embedder",
            "MEMLANE_EMBEDDING_TIMEOUT_S": "120",
        }
        writer = open_memory(agent_project.root, clock=clock, lexical=False, **env)
        SessionsLayer(writer).backfill()
        writer.close()
        server.embeddings_open.clear()
        mem = open_memory(agent_project.root, clock=clock, lexical=False, **env)
        session = Session.start(mem, host="test", session_id="new-session", llm=None)
        try:
            wait_for(
                lambda: session.internals.sessions_layer is not None,
                20,
                "the sessions layer opened",
            )
            message = session.before_agent_start(
                "remember why the redis cache evicted keys so early?"
            ).message
            assert message is not None and "evict keys so early" in message
            assert not session.internals.wait_auto_context_ready(0)  # still loading
            assert session.recall.injected == 1 and session.recall.lexical_while_warming == 1
        finally:
            server.embeddings_open.set()
            session.shutdown()
