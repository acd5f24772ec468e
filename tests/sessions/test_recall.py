"""Search modes, filters, scores, similar, the lead's entry points, the CLI."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from _fixtures import ClaudeSession, HashEmbedder, PiSession, Project

from helpers import Cli, FixedClock
from memlane.core.errors import MemlaneError, NotFoundError
from memlane.engine.project import Memory
from memlane.engine.sessions.layer import (
    SessionsLayer,
    recent_sessions,
    search_sessions,
    similar_sessions,
)
from memlane.index.session_docs import SessionFilters
from memlane.index.sqlite.sessions import SessionStore, sessions_path_for
from memlane.transcripts import read_transcript


@pytest.fixture
def history(agent_project: Project, clock: FixedClock) -> SessionsLayer:
    """Two pi sessions and one Claude Code session on distinct topics."""
    a = PiSession("sess-a")
    a.user("how should we cache the invoice totals in redis")
    a.assistant("cache invoice totals in redis with a five minute ttl")
    a.user("and the webhook retries")
    a.assistant("webhook retries use exponential backoff")
    a.write(agent_project.pi_file("a.jsonl"))
    b = PiSession("sess-b")
    b.clock = b.clock.replace(day=20)
    b.user("migrate the ledger to postgres")
    b.assistant("the ledger migration to postgres needs a unique index")
    b.compaction("ledger migrated to postgres with unique index", "x")
    b.write(agent_project.pi_file("b.jsonl"))
    c = ClaudeSession("sess-c")
    c.clock = c.clock.replace(day=25)
    c.user("why is the redis cache cold after deploy")
    c.assistant([{"type": "text", "text": "the redis cache is flushed by the deploy script"}])
    c.write(agent_project.claude_file("c.jsonl"))
    layer = SessionsLayer(Memory.open(agent_project.root, clock=clock), embedder=HashEmbedder())
    layer.backfill()
    return layer


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic"])
def test_each_mode_answers_with_scores_in_unit_range(history: SessionsLayer, mode: str) -> None:
    result = history.search("redis cache invoice", k=5, mode=mode)
    assert result.mode == mode
    assert result.hits
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert "invoice" in result.hits[0].text


def test_session_filter(history: SessionsLayer) -> None:
    hits = history.search("redis", session="sess-c").hits
    assert hits and {h.session_id for h in hits} == {"sess-c"}


def test_after_and_before_bound_the_timestamp(history: SessionsLayer) -> None:
    late = history.search("redis postgres ledger cache", after="2026-08-20").hits
    assert late and all(h.timestamp and h.timestamp >= "2026-08-20" for h in late)
    early = history.search(
        "redis postgres ledger cache", before="2026-08-20T00:00:00+00:00", mode="semantic"
    ).hits
    assert early and {h.session_id for h in early} == {"sess-a"}


def test_role_filter(history: SessionsLayer) -> None:
    hits = history.search("ledger postgres", role="summary").hits
    assert [h.role for h in hits] == ["summary"]


def test_bad_bounds_and_k_are_errors(history: SessionsLayer) -> None:
    with pytest.raises(MemlaneError):
        history.search("x", after="last tuesday")
    with pytest.raises(MemlaneError):
        history.search("x", k=0)
    with pytest.raises(MemlaneError):
        history.search("x", mode="fuzzy")


def test_rrf_uses_the_sessions_parameters(history: SessionsLayer) -> None:
    from memlane.core.settings import IndexSettings, SessionsSettings

    store = SessionStore(
        history.store.path,
        IndexSettings(fusion="rrf"),
        SessionsSettings(rrf_k=20, lex_mult=1, sem_mult=1),
    )
    try:
        assert store.candidate_counts(3) == (3, 3) and store.rrf_k == 20
        embedder = HashEmbedder()
        mode, hits = store.search("redis", embedder.embed_query("redis"), 3)
        assert mode == "hybrid" and 0 < len(hits) <= 3
        assert hits[0].score <= 1.0
    finally:
        store.close()


def test_lexical_when_there_is_no_vector(history: SessionsLayer) -> None:
    mode, hits = history.store.search("webhook", None, 3, SessionFilters())
    assert mode == "lexical" and "webhook" in hits[0].doc.text


def test_similar_excludes_the_document_itself(history: SessionsLayer) -> None:
    target = history.search("invoice totals redis", k=1).hits[0]
    similar = history.similar(target.key, k=3)
    assert similar.hits and target.key not in {h.key for h in similar.hits}
    assert all(0.0 <= h.score <= 1.0 for h in similar.hits)
    by_entry = history.similar(target.entry_id, k=3)
    assert [h.key for h in by_entry.hits] == [h.key for h in similar.hits]
    with pytest.raises(NotFoundError):
        history.similar("no-such-id")


def test_similar_on_a_document_without_vector_falls_back_to_lexical(
    agent_project: Project,
) -> None:
    session = PiSession()
    session.assistant("", tool_calls=[("bash", {"command": "make zebra"})])
    session.tool_result("zebra built")
    session.write(agent_project.pi_file())
    layer = SessionsLayer(Memory.open(agent_project.root), embedder=HashEmbedder())
    layer.backfill()
    first = layer.search("zebra", mode="lexical").hits[0]
    hits = layer.similar(first.key, k=5).hits
    assert [h.key for h in hits] != [] and first.key not in {h.key for h in hits}


def test_search_sessions_hits_chain_into_the_transcript(history: SessionsLayer) -> None:
    result = search_sessions(history.mem, "webhook retries", k=3, mode="lexical")
    top = result.hits[0]
    assert top.source.endswith("a.jsonl") and "webhook" in top.content
    assert "session:sess-a" in top.heading
    turn = top.heading.split("turn:")[1]
    window = read_transcript(top.source, turn)
    assert any(t.is_target and "webhook" in t.text for t in window.turns)


def test_similar_sessions_and_recent_sessions(history: SessionsLayer) -> None:
    key = history.search("ledger", k=1).hits[0].key
    neighbours = similar_sessions(history.mem, key, 2).hits
    assert neighbours and key not in {h.chunk_hash for h in neighbours}
    recent = recent_sessions(history.mem, 2)
    assert [s.session_id for s in recent] == ["sess-c", "sess-b"]
    assert recent[1].last_summary == "ledger migrated to postgres with unique index"
    assert recent[0].first_user == "why is the redis cache cold after deploy"


def test_store_lives_next_to_the_project_index(history: SessionsLayer) -> None:
    assert history.store.path == sessions_path_for(history.mem.internals.index_path)
    assert history.store.path.name.endswith(".sessions.sqlite")
    assert history.store.meta()["dimension"] == 64


def test_model_change_drops_vectors_and_re_embeds(history: SessionsLayer) -> None:
    class Other(HashEmbedder):
        @property
        def name(self) -> str:
            return "other-64"

    other = Other()
    layer = SessionsLayer(history.mem, embedder=other)
    report = layer.backfill()
    assert report.embedded == history.store.stats()["embedded"] > 0
    assert other.embedded == report.embedded


def test_reindex_wipes_and_rebuilds(history: SessionsLayer) -> None:
    count = history.store.count()
    report = history.reindex()
    assert report.documents_added == count and history.store.count() == count


def test_cli_backfill_stats_status_search_reindex(agent_project: Project, cli: Cli) -> None:
    a = PiSession("sess-cli")
    a.user("the invoice exporter writes csv")
    a.assistant("the csv exporter streams rows")
    a.write(agent_project.pi_file())
    ClaudeSession("cc").write(agent_project.claude_file())  # empty conversation: a source, no docs
    done = cli("sessions", "backfill", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents_added"] == 2
    stats = json.loads(cli("sessions", "stats", "--json").stdout)
    assert (stats["documents"], stats["sessions"], stats["sources"]) == (2, 1, 2)
    assert stats["embedded"] == 0 and stats["size_bytes"] > 0
    status = json.loads(cli("sessions", "status", "--json").stdout)
    assert status["sweep_cycles"] == 0 and status["busy"] is False
    found = json.loads(cli("sessions", "search", "csv exporter", "--json", "-k", "1").stdout)
    assert found["mode"] == "lexical" and found["hits"][0]["session_id"] == "sess-cli"
    text = cli("sessions", "search", "csv", "--session", "sess-cli")
    assert text.returncode == 0 and "turn" in text.stdout
    again = json.loads(cli("sessions", "reindex", "--json").stdout)
    assert again["documents_added"] == 2
    bad = cli("sessions", "search", "csv", "--after", "someday")
    assert bad.returncode != 0 and "ISO 8601" in bad.stderr


def test_bounds_with_a_time_and_a_zone(history: SessionsLayer) -> None:
    everything = history.search("redis invoice webhook retries", k=50, mode="lexical").hits
    stamps = sorted(h.timestamp for h in everything if h.session_id == "sess-a")
    assert len(stamps) >= 3
    # The form: a UTC time to the second, and the same moment at +02:00.
    low, high = stamps[1], stamps[-1]
    after = low[:19] + "Z"  # 2026-08-13T14:0x:00Z
    local_high = (
        datetime.fromisoformat(high.replace("Z", "+00:00"))
        .astimezone(timezone(timedelta(hours=2)))
        .isoformat()
    )
    hits = history.search(
        "redis invoice webhook retries", k=50, mode="lexical", after=after, before=local_high
    ).hits
    assert sorted(h.timestamp for h in hits) == [s for s in stamps if low <= s < high]


def test_a_time_without_a_zone_is_the_clocks_local_time(agent_project: Project) -> None:
    a = PiSession("sess-a")  # messages from 2026-08-13 14:00 UTC on
    a.user("how should we cache the invoice totals in redis")
    a.assistant("cache invoice totals in redis with a five minute ttl")
    a.write(agent_project.pi_file("a.jsonl"))
    plus_two = FixedClock(datetime(2026, 8, 14, 9, 0, tzinfo=timezone(timedelta(hours=2))))
    layer = SessionsLayer(Memory.open(agent_project.root, clock=plus_two), embedder=HashEmbedder())
    layer.backfill()
    # 16:00 local at +02:00 is 14:00 UTC: every message is after it, none before.
    assert layer.search("redis invoice", mode="lexical", after="2026-08-13T16:00").hits
    assert not layer.search("redis invoice", mode="lexical", before="2026-08-13T16:00").hits
    # A bare date is the local day: the 13th from its local midnight (22:00 UTC on the 12th).
    assert layer.search("redis invoice", mode="lexical", after="2026-08-13").hits
    assert not layer.search("redis invoice", mode="lexical", after="2026-08-14").hits
