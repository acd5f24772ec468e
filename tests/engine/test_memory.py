"""Engine behaviour, mostly without the model (provider none): fast and deterministic.

Most tests take the root ``memory`` fixture (lexical, on the fixed ``clock``);
the ones that reopen the project use ``open_memory``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import FixedClock, open_memory
from memlane.core.errors import MemlaneError, NotFoundError
from memlane.core.types import Anchor
from memlane.engine.project import Memory


def test_write_then_search_then_expand(memory: Memory) -> None:
    entry = memory.write("moved the hot cache to Redis with 5 minute TTLs")
    memory.write("the flaky payment test was caused by a shared sandbox account")
    result = memory.search("redis cache ttl")
    assert result.mode == "lexical"
    assert result.notices == []  # lexical by choice (provider none): no warning
    assert result.hits, result
    top = result.hits[0]
    assert "Redis" in top.content
    assert 0 < top.score <= 1.0
    assert top.source == entry.path
    section = memory.expand(top.chunk_hash)
    assert "Redis" in section.content
    assert section.anchor is not None
    assert section.anchor.session == "cli"
    assert section.anchor.transcript == "none"


def test_empty_result_says_empty(memory: Memory) -> None:
    memory.write("something about the billing cron")
    assert memory.search("billing").hits  # the entry is searchable ...
    result = memory.search("zebra xylophone")
    assert result.hits == []  # ... and a query it does not match finds nothing


def test_unknown_and_malformed_hashes(memory: Memory) -> None:
    with pytest.raises(NotFoundError, match="no chunk"):
        memory.expand("0123456789abcdef")
    with pytest.raises(NotFoundError, match="not a chunk hash"):
        memory.expand("xyz")


def test_edits_and_deletions_follow_the_markdown(memory: Memory) -> None:
    store = memory.scope.store
    store.mkdir(parents=True)
    a = store / "2026-01-01.md"
    b = store / "2026-01-02.md"
    a.write_text("# 2026-01-01\n\n### 10:00\n- alpha bravo charlie\n")
    b.write_text("# 2026-01-02\n\n### 11:00\n- delta echo foxtrot\n")
    first = memory.sync()
    assert first.total_files == 2 and first.total_chunks == 2
    again = memory.sync()
    assert again.indexed_files == 0  # unchanged files are skipped
    a.write_text("# 2026-01-01\n\n### 10:00\n- golf hotel india\n")
    b.unlink()
    third = memory.sync()
    assert third.removed_files == 1
    assert third.total_chunks == 1
    assert memory.search("alpha").hits == []
    assert memory.search("delta").hits == []
    assert memory.search("hotel").hits


def test_a_damaged_line_is_reported_and_the_rest_of_its_file_indexed(
    project: Path, memory: Memory
) -> None:
    # ADR 0002: one line in Latin-1 no longer costs the file its other entries.
    store = memory.scope.store
    store.mkdir(parents=True)
    damaged = store / "2026-01-01.md"
    damaged.write_bytes(
        b"# 2026-01-01\n\n### 08:00\n- caf\xe9 latin-1 bytes\n\n### 08:30\n- intact walrus note\n"
    )
    (store / "2026-01-02.md").write_text("# 2026-01-02\n\n### 09:00\n- good entry here\n")
    report = memory.sync()
    assert report.status == "degraded" and report.failed_files == []
    assert [(d.path, d.line) for d in report.damaged_lines] == [(str(damaged), 4)]
    assert "not valid UTF-8 (byte 0xe9" in report.damaged_lines[0].reason
    assert any(str(damaged) in text and "--fix" in text for text in report.notices)
    assert memory.search("good entry").hits
    assert [hit.source for hit in memory.search("walrus").hits] == [str(damaged)]
    assert memory.search("latin").hits == []  # nothing indexed from the damaged line
    state = json.loads((project / ".memsearch" / ".index-state.json").read_text())
    assert state["schema_version"] == 1
    assert state["status"] == "degraded"
    assert state["collection"] == memory.scope.collection
    assert state["failed_files"] == []


def test_state_file_records_success(project: Path, memory: Memory) -> None:
    memory.write("an entry")
    memory.sync()
    state = json.loads((project / ".memsearch" / ".index-state.json").read_text())
    assert state["status"] == "ok"
    assert state["indexed_chunks"] >= 1
    assert state["last_success_at"].endswith("Z")


def test_model_change_re_embeds_cleanly(project: Path, clock: FixedClock) -> None:
    with open_memory(project, clock=clock) as mem:
        mem.write("the exporter writes CSV at midnight")
        old = mem.search("exporter").hits[0].chunk_hash
    with open_memory(project, clock=clock, MEMLANE_EMBEDDING_MODEL="another-model") as mem:
        hits = mem.search("exporter").hits
        assert len(hits) == 1
        assert hits[0].chunk_hash != old
        assert mem.index.count() == 1
        with pytest.raises(NotFoundError):
            mem.expand(old)


def test_corrupt_index_is_rebuilt_from_markdown(project: Path, clock: FixedClock) -> None:
    with open_memory(project, clock=clock) as mem:
        mem.write("the rate limiter allows 100 requests per minute")
        assert mem.search("rate limiter").hits
        path = mem.internals.index_path
    path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with open_memory(project, clock=clock) as mem:
        result = mem.search("rate limiter")
        assert result.hits
        assert any("rebuilt from markdown" in n for n in result.notices)
        again = mem.search("rate limiter")
        assert not any("rebuilt" in n for n in again.notices)


def test_reindex_rebuilds_from_markdown_alone(memory: Memory) -> None:
    memory.write("first")
    memory.write("second entry with words")
    before = memory.search("second entry").hits[0].chunk_hash
    report = memory.reindex()
    assert report.operation == "reindex"
    assert memory.search("second entry").hits[0].chunk_hash == before


def test_filters(memory: Memory) -> None:
    store = memory.scope.store
    (store / "topics").mkdir(parents=True)
    (store / "2026-03-01.md").write_text(
        "# 2026-03-01\n\n### 09:00\n<!-- session:s1 turn:aaaaaaaa transcript:/t1 -->\n- kiwi in march\n"
    )
    (store / "2026-04-01.md").write_text(
        "# 2026-04-01\n\n### 09:00\n<!-- session:s2 turn:bbbbbbbb transcript:/t2 -->\n- kiwi in april\n"
    )
    (store / "topics" / "fruit.md").write_text(
        "---\nname: Fruit\n---\n\n## Kiwi\nkiwi is a topic\n"
    )
    assert len(memory.search("kiwi", 10).hits) == 3
    assert [h.content for h in memory.search("kiwi", 10, kind="topic").hits] == [
        "## Kiwi\nkiwi is a topic"
    ]
    april = memory.search("kiwi", 10, after="2026-03-15")
    assert len(april.hits) == 1 and "april" in april.hits[0].content
    march = memory.search("kiwi", 10, before="2026-03-15", kind="journal")
    assert len(march.hits) == 1 and "march" in march.hits[0].content
    s2 = memory.search("kiwi", 10, session="s2")
    assert len(s2.hits) == 1 and "april" in s2.hits[0].content
    pref = memory.search("kiwi", 10, source_prefix=str(store / "topics"))
    assert len(pref.hits) == 1


def test_time_bounds_with_a_zone_filter_entries_by_their_minute(memory: Memory) -> None:
    """after/before take ISO 8601 times (core/bounds.py); the memory's clock is UTC."""
    store = memory.scope.store
    store.mkdir(parents=True, exist_ok=True)
    (store / "2026-12-03.md").write_text(
        "# 2026-12-03\n\n"
        + "".join(
            f"### {hhmm}\n<!-- session:s1 turn:{n}aaaaaaa transcript:/t1 -->\n- kiwi at {hhmm}\n\n"
            for n, hhmm in enumerate(("14:10", "14:12", "14:15"))
        )
    )

    def times(**bounds: str) -> list[str]:
        hits = memory.search("kiwi", 10, kind="journal", **bounds).hits
        return sorted(h.content.rsplit(" ", 1)[-1] for h in hits)

    assert times(after="2026-12-03T14:12:30Z") == ["14:15"]
    assert times(after="2026-12-03T14:12:00Z") == ["14:12", "14:15"]
    assert times(before="2026-12-03T15:12:30+01:00") == ["14:10", "14:12"]
    assert times(after="2026-12-03T14:11", before="2026-12-03T14:15") == ["14:12"]
    assert times(after="2026-12-03", before="2026-12-04") == ["14:10", "14:12", "14:15"]
    assert times(before="2026-12-03") == []
    with pytest.raises(MemlaneError, match="is not earlier than before"):
        memory.search("kiwi", after="2026-12-03T15:00:00Z", before="2026-12-03T14:00:00Z")


def test_status_reports_scope_and_counts(memory: Memory) -> None:
    memory.write("one entry")
    memory.sync()
    st = memory.status().to_json()
    assert st["scope"]["collection"].startswith("ms_proj_")
    assert st["chunks"] == 1
    assert st["index_state"]["status"] == "ok"
    assert st["index_state_path"].endswith(".memsearch/.index-state.json")


def test_editing_an_entry_refreshes_the_context_of_the_next(memory: Memory) -> None:
    """The entry after an edited one keeps its hash but gets its new context."""
    store = memory.scope.store
    store.mkdir(parents=True)
    daily = store / "2026-05-01.md"
    anchor = "<!-- session:s1 turn:{} transcript:/t -->"
    first = "# 2026-05-01\n\n### 09:00\n" + anchor.format("aaaaaaaa") + "\n- we picked {}\n"
    second = "\n### 09:05\n" + anchor.format("bbbbbbbb") + "\n- yes, that one works\n"
    daily.write_text(first.format("marmalade") + second)
    memory.sync()
    reply = [h for h in memory.search("marmalade", 5).hits if "that one" in h.content]
    assert reply, "the reply is found through its context"
    daily.write_text(first.format("quince") + second)
    os.utime(daily, ns=(daily.stat().st_atime_ns, daily.stat().st_mtime_ns + 10**9))
    report = memory.sync()
    assert report.indexed_chunks == 2  # the edited entry and the one after it
    hits = memory.search("quince", 5).hits
    replies = [h for h in hits if "that one" in h.content]
    assert replies and replies[0].chunk_hash == reply[0].chunk_hash
    assert not [h for h in memory.search("marmalade", 5).hits if "that one" in h.content]
    assert memory.index.count() == 2


def test_a_failed_embedder_load_is_re_probed_after_the_negative_cache(
    project: Path, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fixing the model setup mid-session is picked up without a restart."""
    import shutil

    import memlane.engine.shared.embedding as embedding_module
    from memlane.embed.factory import bundled_model_files

    model_dir = tmp_path / "model"
    mem = open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_EMBEDDING_PATH=str(model_dir),
        MEMLANE_EMBEDDING_MODEL="mine",
    )
    assert mem.embedding.embedder is None
    assert "is not a directory" in (mem.embedding.problem or "")
    model_dir.mkdir()
    onnx_file, tokenizer = bundled_model_files()
    shutil.copy(onnx_file, model_dir / "model.onnx")
    shutil.copy(tokenizer, model_dir / "tokenizer.json")
    assert mem.embedding.embedder is None  # still inside the negative cache
    monkeypatch.setattr(embedding_module, "EMBEDDER_RETRY_S", 0.0)
    assert mem.embedding.embedder is not None
    assert mem.embedding.problem is None


def test_similar_returns_a_notes_real_neighbours_and_never_the_chunk_itself(
    project: Path, clock: FixedClock
) -> None:
    """memory_similar on a journal chunk: dense neighbours of its stored vector."""
    mem = open_memory(project, clock=clock, lexical=False)
    notes = [
        "the team moved the hot cache to Redis with five minute TTLs",
        "CI runs on GitHub Actions with a matrix of three Python versions",
        "keys in the Redis cache now expire after five minutes",
        "the user prefers tabs over spaces in the Makefile",
    ]
    for number, note in enumerate(notes):
        clock.advance(minutes=1)
        # One session each: an entry's embedding input carries some of the entry
        # before it in its session (docs/adr/0005), which must not make a neighbour.
        mem.write(note, Anchor(session=f"s{number}", turn=f"t{number}", transcript="none"))
    mem.sync()
    source = mem.search("hot cache Redis TTLs", mode="lexical").hits[0]
    assert "hot cache" in source.content
    result = mem.similar(source.chunk_hash, k=3)
    assert result.mode == "semantic" and not result.notices
    assert [h.chunk_hash for h in result.hits].count(source.chunk_hash) == 0
    assert len(result.hits) == 3
    assert "expire after five minutes" in result.hits[0].content
    mem.close()


def test_similar_on_a_topic_chunk_finds_the_journal_note_it_restates(
    project: Path, clock: FixedClock
) -> None:
    from memlane.engine.topics.ops import add_entry

    mem = open_memory(project, clock=clock, lexical=False)
    mem.write("the deploy script needs AWS_PROFILE=staging before it runs")
    clock.advance(minutes=1)
    mem.write("the flaky login test was a race in the token refresh")
    add_entry(
        mem,
        content="Set AWS_PROFILE=staging before running the deploy script.",
        topic="deploys",
        title="Staging profile",
    )
    topic_hit = mem.search("AWS_PROFILE staging deploy", kind="topic", mode="lexical").hits[0]
    assert topic_hit.source.endswith("topics/deploys.md")
    result = mem.similar(topic_hit.chunk_hash, k=4)
    assert topic_hit.chunk_hash not in {h.chunk_hash for h in result.hits}
    journal = [h for h in result.hits if not h.source.endswith("deploys.md")]
    assert "needs AWS_PROFILE=staging" in journal[0].content  # above the login note
    mem.close()


def test_similar_without_a_vector_falls_back_to_its_words(project: Path, clock: FixedClock) -> None:
    mem = open_memory(project, clock=clock)  # lexical: nothing is embedded
    mem.write("billing export runs nightly at 02:00")
    clock.advance(minutes=1)
    mem.write("billing export writes CSV files to the s3 bucket")
    mem.write("the user likes short commit messages")
    mem.sync()
    first = mem.search("nightly 02:00").hits[0]
    result = mem.similar(first.chunk_hash)
    assert result.notices == ["this chunk has no vector yet; showing lexical neighbours"]
    assert result.hits and "s3 bucket" in result.hits[0].content
    assert first.chunk_hash not in {h.chunk_hash for h in result.hits}
    mem.close()
