"""Recall an agent can trust (engine/recall/trust.py): the current fact first,
dated and banded hits, no echoes. Searches run with the bundled model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import pytest

from helpers import FixedClock, open_memory, start_session
from memlane.core.errors import NotFoundError
from memlane.core.render import render_search
from memlane.core.types import Anchor, Hit
from memlane.engine.project import Memory
from memlane.engine.recall.trust import (
    finished,
    is_echo,
    is_frontmatter_only,
    newest_first,
    without_echoes,
)
from memlane.store import topics


@pytest.fixture
def mem(project: Path, clock: FixedClock) -> Iterator[Memory]:
    memory = open_memory(project, clock=clock, lexical=False)
    try:
        yield memory
    finally:
        memory.close()


def _write(mem: Memory, text: str, day: int, supersedes: tuple[str, ...] = ()) -> None:
    mem.write(text, now=datetime(2026, 11, day, 9, 30), supersedes=supersedes)


def _hash_of(mem: Memory, words: str) -> str:
    mem.sync()
    hits = mem.search(words, 10, min_score=0.0).hits
    return next(h.chunk_hash for h in hits if words in h.content)


def test_the_newer_entry_about_one_thing_ranks_first_and_the_older_is_marked(
    mem: Memory,
) -> None:
    _write(mem, "Background jobs run on Celery with a RabbitMQ broker.", 2)
    _write(mem, "The API rate limit is 600 requests per minute per token.", 3)
    _write(
        mem, "We replaced Celery with Dramatiq for background jobs: retries were unreliable.", 20
    )
    mem.sync()
    result = mem.search("what runs our asynchronous tasks?", 5)
    first, second = result.hits[0], result.hits[1]
    assert "Dramatiq" in first.content and first.superseded_by is None
    assert "RabbitMQ" in second.content and second.superseded_by == first.chunk_hash
    assert first.score >= second.score
    assert "OUTDATED: superseded by the newer " + first.chunk_hash in render_search(result)


def test_two_true_facts_of_one_subject_stay_current(mem: Memory) -> None:
    # Close in meaning (cosine 0.66) but neither says that something changed.
    _write(mem, "Deploys go out Tuesday to Thursday before 15:00.", 2)
    _write(mem, "Deploys are frozen on Fridays unless it is a hotfix.", 12)
    mem.sync()
    hits = mem.search("when are we allowed to deploy?", 5).hits
    assert len(hits) == 2 and all(h.superseded_by is None for h in hits)


def test_of_two_later_notes_that_say_something_changed_the_closer_one_is_the_correction(
    mem: Memory,
) -> None:
    # Both later notes say that something changed, share five words with the
    # first and sit above the correction cosine, but the note about the test
    # runner (written later the same day) is further from it in meaning than
    # the raised version (0.58 against 0.72) and must not take its place.
    _write(
        mem,
        "The minimum supported Rust version is 1.70, pinned in rust-toolchain.toml "
        "and checked by the msrv CI job.",
        2,
    )
    # One later session wrote both (two steps of one conversation do not
    # correct each other).
    mem.write(
        "Raised the minimum supported Rust version to 1.80 so we can use LazyLock; "
        "rust-toolchain.toml and the msrv CI job were bumped.",
        Anchor(session="later", turn="t1", transcript="/t/later.jsonl"),
        now=datetime(2026, 11, 20, 9, 30),
    )
    mem.write(
        "Moved the msrv CI job to cargo-nextest: it builds the workspace with the "
        "Rust version pinned in rust-toolchain.toml.",
        Anchor(session="later", turn="t2", transcript="/t/later.jsonl"),
        now=datetime(2026, 11, 20, 11, 0),
    )
    mem.sync()
    hits = mem.search("what does the msrv CI job check, pinned in rust-toolchain.toml?", 5).hits
    old = next(h for h in hits if "1.70" in h.content)
    raised = next(h for h in hits if "1.80" in h.content)
    assert old.superseded_by == raised.chunk_hash and raised.superseded_by is None
    assert hits[0].chunk_hash == raised.chunk_hash


def test_a_stated_correction_marks_the_old_entry_and_brings_the_new_one(mem: Memory) -> None:
    _write(mem, "The minimum supported Rust version is 1.70.", 2)
    _write(mem, "Grafana Loki collects the application logs.", 3)
    old = _hash_of(mem, "minimum supported Rust version")
    # Nothing in the new text matches the question's words or meaning well:
    # only the marker ties it to the old entry.
    _write(mem, "Bumped to 1.80 for let-else.", 21, supersedes=(old,))
    mem.sync()
    day = (mem.scope.store / "2026-11-21.md").read_text(encoding="utf-8")
    assert "<!-- supersedes:" in day and "- <!--" not in day
    hits = mem.search("which compiler release is the oldest we support?", 5).hits
    assert "1.80" in hits[0].content
    marked = next(h for h in hits if h.chunk_hash == old)
    assert marked.superseded_by == hits[0].chunk_hash


def test_an_unknown_hash_to_supersede_writes_nothing(mem: Memory) -> None:
    _write(mem, "The staging database is PostgreSQL 15.", 2)
    before = sorted(p.read_text(encoding="utf-8") for p in mem.scope.store.glob("*.md"))
    with pytest.raises(NotFoundError, match="no memory has the chunk hash"):
        _write(mem, "Staging moved to PostgreSQL 16.", 9, supersedes=("0123456789abcdef",))
    after = sorted(p.read_text(encoding="utf-8") for p in mem.scope.store.glob("*.md"))
    assert after == before


def test_every_hit_is_dated_and_banded_and_can_come_newest_first(
    mem: Memory, clock: FixedClock
) -> None:
    from memlane.engine.recall.router import search
    from memlane.engine.shared.request import SearchRequest

    for day, text in ((3, "Redis fronts the hot cache."), (25, "The hot cache holds carts.")):
        _write(mem, text, day)
    mem.sync()
    by_score = search(mem, SearchRequest("hot cache", 5)).result.hits
    today = clock.now().date()
    for hit in by_score:
        assert hit.date is not None and hit.band in ("strong", "possible", "weak")
        assert hit.age_days == (today - date.fromisoformat(hit.date[:10])).days
    newest = search(mem, SearchRequest("hot cache", 5, order="newest")).result.hits
    assert [h.date for h in newest] == sorted((h.date for h in by_score), reverse=True)
    assert "[" + by_score[0].band + "; 2026-11-" in render_search(  # type: ignore[operator]
        search(mem, SearchRequest("hot cache", 5)).result
    )


def test_a_digest_never_outranks_an_answer(mem: Memory) -> None:
    _write(mem, "The team chose Grafana Loki for logs instead of the ELK stack.", 2)
    _write(
        mem,
        "- user asked: Which log aggregation system do we use?\n- agent answered: Let me check.",
        3,
    )
    mem.sync()
    hits = mem.search("log aggregation system", 5).hits
    assert "Grafana Loki" in hits[0].content
    assert all(h.score <= hits[0].score for h in hits)


def test_topic_frontmatter_is_never_a_hit(mem: Memory) -> None:
    topics.add(
        mem.scope.store,
        content="The hot cache runs on Redis 7 with five minute TTLs.",
        topic="redis cache",
        title="Hot cache",
        type="project",
        today=date(2026, 11, 20),
    )
    mem.sync()
    hits = mem.search("redis cache", 10, min_score=0.0).hits
    assert hits and not any(h.content.lstrip().startswith("---") for h in hits)
    assert any(h.kind == "topic" and h.date == "2026-11-20" for h in hits)


def test_a_topic_preamble_is_a_hit_without_the_frontmatter_above_it(mem: Memory) -> None:
    topics.add(
        mem.scope.store,
        content="The hot cache runs on Redis 7 with five minute TTLs.",
        topic="redis cache",
        title="Hot cache",
        type="project",
        today=date(2026, 11, 20),
    )
    path = mem.scope.store / "topics" / "redis-cache.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("---\n\n##", "---\nThe calendar of cache freeze windows.\n\n##", 1),
        encoding="utf-8",
    )
    mem.sync()
    hits = mem.search("calendar of cache freeze windows", 10, min_score=0.0).hits
    preamble = next(h for h in hits if "freeze windows" in h.content)
    assert preamble.content == "The calendar of cache freeze windows."
    assert preamble.kind == "topic" and preamble.date == "2026-11-20"
    # The chunk stays the index's: expand finds it by its hash.
    assert "freeze windows" in mem.expand(preamble.chunk_hash).content


def test_auto_context_never_pushes_an_outdated_fact(project: Path, clock: FixedClock) -> None:
    writer = open_memory(project, clock=clock, lexical=False)
    _write(writer, "The hot Redis cache keeps entries for a TTL of 5 minutes.", 2)
    _write(writer, "We raised the hot Redis cache TTL from 5 to 15 minutes.", 20)
    writer.sync()
    writer.close()
    mem = open_memory(project, clock=clock, lexical=False, MEMLANE_AUTO_CONTEXT="on")
    session = start_session(mem)
    try:
        assert session.internals.wait_auto_context_ready(30)
        injection = session.before_agent_start("what TTL does the hot Redis cache use?")
        assert injection.message is not None
        assert "15 minutes" in injection.message
        assert "TTL of 5 minutes" not in injection.message
    finally:
        session.shutdown()
        mem.close()


# -- the parts, on hits made by hand -------------------------------------------


def _hit(content: str, source: str = "/s/2026-11-02.md", heading: str = "09:30") -> Hit:
    return Hit(0.5, "0" * 16, source, heading, 1, 3, content, kind="journal")


def test_dates_come_from_the_daily_file_and_the_entry_heading() -> None:
    (hit,) = finished([_hit("- x")], date(2026, 11, 30), calibrated=False)
    assert (hit.date, hit.age_days) == ("2026-11-02T09:30", 28)
    (other,) = finished([_hit("- x", "/s/notes.md", "Intro")], date(2026, 11, 30), calibrated=False)
    assert other.date is None and other.age_days is None


def test_echoes_and_frontmatter() -> None:
    assert is_echo("### 09:30\n- user asked: why?\n- agent answered: because")
    assert is_echo("- the user asked which cache we use\n- the user asked about the TTL")
    assert not is_echo("- Which cache do we use?")  # a turn of a conversation
    assert not is_echo("- The cache TTL is five minutes. Why? Load.")
    assert is_frontmatter_only("---\nname: Redis\nupdated: 2026-11-20\n---\n")
    assert not is_frontmatter_only("---\nname: Redis\n---\n## Hot cache\nRedis 7")
    answer, echo = _hit("- Loki collects logs"), _hit("- user asked: which logs tool?")
    ranked = without_echoes([replace_score(echo, 0.99), replace_score(answer, 0.4)])
    assert ranked[0].content == answer.content and ranked[1].score <= 0.4


def replace_score(hit: Hit, score: float) -> Hit:
    from dataclasses import replace

    return replace(hit, score=score)


def test_bands_and_the_newest_first_order() -> None:
    from memlane.core.confidence import POSSIBLE, STRONG, WEAK

    scores = (STRONG, POSSIBLE + 0.01, WEAK * 2, WEAK / 10)
    hits = [replace_score(_hit("- a"), s) for s in scores]
    assert [h.band for h in finished(hits, date(2026, 12, 1), calibrated=True)] == [
        "strong",
        "possible",
        "weak",
        "weak",  # shown below the weak floor (asked for): still only weak
    ]
    assert all(h.band is None for h in finished(hits, date(2026, 12, 1), calibrated=False))
    undated = _hit("- b", "/s/notes.md", "x")
    older, newer = finished(
        [_hit("- c", "/s/2026-10-01.md"), _hit("- d")], date(2026, 12, 1), calibrated=False
    )
    assert newest_first([older, undated, newer]) == [newer, older, undated]
