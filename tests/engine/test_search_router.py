"""engine/recall/router.py: every search is checked once, then answered by one leg."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memlane.core.errors import MemlaneError, StoreError
from memlane.engine.project import Memory
from memlane.engine.recall.router import Shown, search, search_each
from memlane.engine.shared.request import SearchRequest, check_request
from memlane.engine.shared.results import Progress


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        (SearchRequest("q", 0), "k must be between 1 and 100"),
        (SearchRequest("q", 101), "k must be between 1 and 100"),
        (SearchRequest("q", mode="fuzzy"), "unknown search mode 'fuzzy'"),
        (SearchRequest("q", kind="notes"), "unknown kind 'notes'"),
        (SearchRequest("q", scope="world"), "unknown scope 'world'"),
        (SearchRequest("q", kind="session", scope="all"), 'scope "all" searches notes'),
        (SearchRequest("q", kind="all", scope="all"), 'scope "all" searches notes'),
        (SearchRequest("q", after="yesterday"), "after 'yesterday' is not a date"),
        (SearchRequest("q", before="2026-13-01"), "before '2026-13-01' is not a date"),
        (SearchRequest("q", min_score=1.5), "min_score must be between 0 and 1"),
        (SearchRequest("q", kind="session", role="robot"), "unknown role 'robot'"),
    ],
)
def test_a_bad_request_is_refused_before_anything_is_searched(
    memory: Memory, request_: SearchRequest, says: str
) -> None:
    memory.write("the cache moved to redis")
    with pytest.raises(MemlaneError, match=says) as refused:
        search(memory, request_)
    assert refused.value.hint  # and says what to do
    # Nothing ran: not even the sync that creates the index file.
    assert not memory.internals.index_path.exists()


def test_good_requests_pass_the_checks() -> None:
    for request in (
        SearchRequest("q"),
        SearchRequest("q", 100, kind="journal", after="2026-11-30", before="2026-12-01T10:00"),
        SearchRequest("q", kind="session", role="user", mode="lexical", min_score=0.0),
        SearchRequest("q", scope="all", kind="topic", mode="semantic"),
    ):
        check_request(request)


@pytest.mark.parametrize(
    ("request_", "route"),
    [
        (SearchRequest("q"), "notes"),
        (SearchRequest("q", kind="journal"), "notes"),
        (SearchRequest("q", kind="topic"), "notes"),
        (SearchRequest("q", kind="session"), "sessions"),
        (SearchRequest("q", kind="all"), "everything"),
        (SearchRequest("q", scope="all"), "projects"),
        (SearchRequest("q", kind="topic", scope="all"), "projects"),
    ],
)
def test_kind_and_scope_name_one_route(request_: SearchRequest, route: str) -> None:
    assert request_.route == route


def test_the_notes_route_finds_what_was_written(memory: Memory) -> None:
    memory.write("the cache moved to redis with five minute expiry")
    recalled = search(memory, SearchRequest("redis cache", mode="lexical"))
    assert recalled.fan_out is None
    assert recalled.result.hits and "redis" in recalled.result.hits[0].content
    # Memory.search is the same router.
    assert [h.chunk_hash for h in memory.search("redis cache", mode="lexical").hits] == [
        h.chunk_hash for h in recalled.result.hits
    ]


def test_kind_all_merges_notes_and_sessions_on_one_scale(memory: Memory) -> None:
    memory.write("the cache moved to redis with five minute expiry")
    result = search(memory, SearchRequest("redis cache", kind="all", mode="lexical")).result
    assert result.hits  # the notes' hit, with no session transcript to add
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)


class Bars:
    """A person's view of a search (router.Shown): the bars opened, what they were told."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.told: list[tuple[str, str]] = []
        self.said: list[str] = []

    @contextmanager
    def bar(self, label: str) -> Iterator[Progress]:
        self.opened.append(label)

        def told(done: int, total: int, phase: str) -> None:
            self.told.append((label, phase))

        yield told

    def shown(self) -> Shown:
        return Shown(bar=self.bar, say=self.said.append)


def test_a_person_sees_the_catch_up_first_and_the_request_is_checked_before_it(
    memory: Memory,
) -> None:
    memory.write("the cache moved to redis with five minute expiry")
    seen = Bars()
    with pytest.raises(MemlaneError, match="min_score must be between 0 and 1"):
        search(memory, SearchRequest("redis", min_score=1.5), shown=seen.shown())
    assert seen.opened == [] and not memory.internals.index_path.exists()  # checked before anything
    recalled = search(memory, SearchRequest("redis cache", mode="lexical"), shown=seen.shown())
    assert recalled.result.hits and "redis" in recalled.result.hits[0].content
    assert seen.opened == ["indexing"]
    assert seen.told and {label for label, _ in seen.told} == {"indexing"}
    both = Bars()
    search(memory, SearchRequest("redis", kind="all", mode="lexical"), shown=both.shown())
    assert both.opened == ["sessions", "indexing"]  # past sessions caught up first


def test_a_person_searching_notes_needs_a_store_an_agent_gets_an_empty_answer(
    memory: Memory,
) -> None:
    with pytest.raises(StoreError, match="no memory store"):
        search(memory, SearchRequest("redis", mode="lexical"), shown=Bars().shown())
    assert search(memory, SearchRequest("redis", mode="lexical")).result.hits == []


def test_a_batch_is_checked_once_caught_up_once_and_answered_in_order(memory: Memory) -> None:
    memory.write("the nightly export runs at 02:00 UTC")
    memory.write("rotate the staging API keys monthly")
    seen = Bars()
    request = SearchRequest("", 1, mode="lexical")
    found = list(search_each(memory, request, ["nightly export", "", "staging keys"], seen.shown()))
    assert [r.query for r in found] == ["nightly export", "", "staging keys"]
    assert "02:00 UTC" in found[0].hits[0].content
    assert found[1].hits == []
    assert "API keys" in found[2].hits[0].content
    assert seen.opened == ["indexing"]
    with pytest.raises(MemlaneError, match="k must be between 1 and 100"):
        list(search_each(memory, SearchRequest("", 0), ["x"], seen.shown()))
