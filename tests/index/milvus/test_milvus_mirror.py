"""The ledger's mirror of a Milvus collection (index/milvus/mirror.py), on
real Milvus Lite: each word's document frequency kept on memlane's writes
and deletes, compared again after another writer (rows written with plain
pymilvus, as memsearch writes them), rebuilt when the ledger is lost or
damaged; searches then score as a fresh process probing Milvus does, in the
two round trips memsearch makes."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for
from _lite import open_index, raw_client

from memlane.index.milvus import mirror, search
from memlane.index.milvus.connection import LITE
from memlane.index.milvus.notes import MilvusIndex
from memlane.index.protocol import SearchFilters

NOTES = {
    "a.md": ["the redis cache holds sessions", "redis moved to a bigger host"],
    "b.md": ["the webhook test pins the clock", "Postgres pool raised to 40"],
    "c.md": ["Redis and Postgres share the host", "nightly invoices go to the bucket"],
}
WORDS = ["redis", "postgres", "host", "webhook", "the", "invoices", "absent"]


def true_counts(contents: Iterable[str], words: Iterable[str]) -> dict[str, int]:
    """Each word's document frequency, counted the way Milvus Lite's standard
    analyzer splits (a Unicode \\w+ on the lower-cased text)."""
    per_row = [set(re.findall(r"\w+", text.lower())) for text in contents]
    return {w: sum(1 for row in per_row if w in row) for w in words}


def fill(index: MilvusIndex, root: Path, notes: dict[str, list[str]]) -> None:
    for day, (name, texts) in enumerate(notes.items(), 1):
        record, chunks = make_file(src(root, name), texts, date=f"2026-01-0{day}")
        index.replace_file(record, chunks, vectors_for(chunks))


def contents(notes: dict[str, list[str]]) -> list[str]:
    return [text for texts in notes.values() for text in texts]


def memsearch_row(root: Path, name: str, text: str) -> dict[str, Any]:
    """A row as memsearch writes it: its fields only, no memlane metadata."""
    _, chunks = make_file(src(root, name), [text])
    c = chunks[0].chunk
    return {
        "chunk_hash": c.chunk_hash,
        "embedding": unit_vector(text).tolist(),
        "content": c.content,
        "source": c.source,
        "heading": c.heading,
        "heading_level": c.heading_level,
        "start_line": c.start_line,
        "end_line": c.end_line,
    }


def scores(
    index: MilvusIndex, query: str, filters: SearchFilters | None = None
) -> list[tuple[str, float]]:
    _, hits = index.search(query, unit_vector(query), 6, filters)
    return [(hit.chunk.chunk_hash, hit.score) for hit in hits]


def assert_same(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    # A trusted mirror on Lite reads its cosines from the local copy, a fresh
    # probe gets them from Milvus Lite (a float32 distance, 1 - cosine):
    # they agree to float32 precision.
    assert [h for h, _ in got] == [h for h, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)


@pytest.fixture
def filled(milvus_index: MilvusIndex, tmp_path: Path) -> MilvusIndex:
    fill(milvus_index, tmp_path, NOTES)
    return milvus_index


def test_counts_follow_memlanes_writes_and_deletes(filled: MilvusIndex, tmp_path: Path) -> None:
    assert filled.word_counts(WORDS) == (6, true_counts(contents(NOTES), WORDS))
    # A file rewritten (one chunk kept, one replaced) and a file removed.
    changed = {**NOTES, "a.md": ["the redis cache holds sessions", "webhook retries doubled"]}
    record, chunks = make_file(src(tmp_path, "a.md"), changed["a.md"])
    filled.replace_file(record, chunks, vectors_for(chunks))
    assert filled.word_counts(WORDS) == (6, true_counts(contents(changed), WORDS))
    filled.remove_files([src(tmp_path, "c.md")])
    del changed["c.md"]
    assert filled.word_counts(WORDS) == (4, true_counts(contents(changed), WORDS))
    # Every count came from memlane's own writes: the collection was listed
    # once, when the mirror was first trusted.
    assert filled.comparisons == 1


def test_another_writer_is_noticed_and_searches_score_as_a_fresh_probe(
    filled: MilvusIndex,
    lite_db: Path,
    collection: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The mirror is trusted (no search yet: a search caches the centroid of
    # the collection's vectors, which a fresh process would sample anew).
    assert filled.word_counts(["redis"]) == (6, {"redis": 3})
    theirs = [
        memsearch_row(tmp_path, "m.md", "memsearch wrote about redis and the host"),
        memsearch_row(tmp_path, "m.md", "another redis note"),
    ]
    gone = [c.chunk.chunk_hash for c in make_file(src(tmp_path, "b.md"), NOTES["b.md"])[1]][:1]
    with raw_client(lite_db) as client:
        client.upsert(collection_name=collection, data=theirs)
        client.delete(collection_name=collection, ids=gone)
    now = [*contents(NOTES), *(row["content"] for row in theirs)]
    now.remove(NOTES["b.md"][0])
    assert filled.word_counts(WORDS) == (7, true_counts(now, WORDS))
    assert filled.comparisons == 2
    # A fresh process (a new ledger) whose mirror is not trusted probes
    # Milvus for each word: the same scores.
    monkeypatch.setattr(mirror, "SEARCH_FETCH_MAX", 0)
    probing = open_index(lite_db, collection, tmp_path / "probing-ledger.sqlite")
    assert probing.word_counts(WORDS) is None
    for query in ("redis host", "webhook clock", "what is the bucket"):
        assert_same(scores(probing, query), scores(filled, query))
        # A filter's rows: counted by Milvus for the one, by the mirror for
        # the other.
        for filters in (
            SearchFilters(kind="journal"),
            SearchFilters(source_prefix=src(tmp_path, "a")),
            SearchFilters(after="2026-01-02", before="2026-01-04"),
        ):
            assert_same(scores(probing, query, filters), scores(filled, query, filters))
    probing.close()


def test_a_server_started_again_is_compared_again(
    filled: MilvusIndex, lite_db: Path, collection: str, tmp_path: Path
) -> None:
    """Another process can write only while this one does not hold Milvus
    Lite: a new server means the mirror is compared before it is trusted."""
    assert filled.word_counts(["redis"]) == (6, {"redis": 3})
    with raw_client(lite_db) as client:
        client.upsert(collection_name=collection, data=[memsearch_row(tmp_path, "m.md", "Redis")])
    LITE.release_now(lite_db.absolute())
    assert filled.word_counts(["redis"]) == (7, {"redis": 4})


def test_handles_sharing_a_ledger_keep_it_for_each_other(
    filled: MilvusIndex, lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    """The engine's handles of one memory (an indexer, a searcher) share a
    ledger: one's writes need no comparison by the other; a write through
    another ledger (another project sharing the collection) does."""
    searcher = open_index(lite_db, collection, ledger_path)
    assert searcher.word_counts(["redis"]) == (6, {"redis": 3})
    record, chunks = make_file(src(tmp_path, "d.md"), ["redis again"])
    filled.replace_file(record, chunks, vectors_for(chunks))
    assert searcher.word_counts(["redis"]) == (7, {"redis": 4})
    assert searcher.comparisons == 1
    other = open_index(lite_db, collection, tmp_path / "another-ledger.sqlite")
    record, chunks = make_file(src(tmp_path, "e.md"), ["Redis there too"])
    other.replace_file(record, chunks, vectors_for(chunks))
    assert searcher.word_counts(["redis"]) == (8, {"redis": 5})
    assert searcher.comparisons == 2
    other.close()
    searcher.close()


def test_the_copy_a_search_holds_follows_every_write_as_a_fresh_read_of_it(
    filled: MilvusIndex, lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    """A search holds the copy of the vectors in memory; each write of this
    index, of another handle on the same ledger and of another ledger then
    leaves it as a handle reading the ledger afresh finds it."""
    queries = ("redis host", "webhook clock", "nightly invoices", "kafka topics")
    sharing = open_index(lite_db, collection, ledger_path)
    other = open_index(lite_db, collection, tmp_path / "another-ledger.sqlite")

    def check() -> None:
        fresh = open_index(lite_db, collection, ledger_path)
        try:
            for query in queries:
                assert_same(scores(filled, query), scores(fresh, query))
                _, held = filled.search("", unit_vector(query), 8, lexical=False)
                _, read = fresh.search("", unit_vector(query), 8, lexical=False)
                assert [(h.chunk.chunk_hash, h.chunk.content) for h in held] == [
                    (h.chunk.chunk_hash, h.chunk.content) for h in read
                ]
        finally:
            fresh.close()

    try:
        check()  # the copy is held from here on
        changed = ["the redis cache holds sessions", "kafka topics replaced the queue"]
        record, chunks = make_file(src(tmp_path, "a.md"), changed)
        filled.replace_file(record, chunks, vectors_for(chunks))
        check()
        filled.remove_files([src(tmp_path, "c.md")])
        check()
        record, chunks = make_file(src(tmp_path, "d.md"), ["kafka consumers lag at night"])
        sharing.replace_file(record, chunks, vectors_for(chunks))
        check()
        record, chunks = make_file(src(tmp_path, "e.md"), ["the invoices bucket moved"])
        other.replace_file(record, chunks, vectors_for(chunks))
        check()
    finally:
        sharing.close()
        other.close()


@pytest.mark.parametrize("damage", ["deleted", "garbage"])
def test_a_lost_or_damaged_ledger_is_rebuilt(
    lite_db: Path, collection: str, tmp_path: Path, damage: str
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    index = open_index(lite_db, collection, ledger)
    index.ensure_model(MODEL, DIM)
    fill(index, tmp_path, NOTES)
    before = scores(index, "redis postgres host")
    index.close()
    for path in tmp_path.glob("ledger.sqlite*"):
        path.unlink()
    if damage == "garbage":
        ledger.write_bytes(b"not a database at all" * 100)
    again = open_index(lite_db, collection, ledger)
    again.ensure_model(MODEL, DIM)
    assert again.word_counts(WORDS) == (6, true_counts(contents(NOTES), WORDS))
    assert_same(scores(again, "redis postgres host"), before)
    again.close()


class Calls:
    """Counts the calls a pymilvus client gets (each is a round trip)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from pymilvus import MilvusClient

        self.names: Counter[str] = Counter()
        for name in ("search", "hybrid_search", "query", "get", "query_iterator"):
            self._wrap(monkeypatch, MilvusClient, name)
        for name in ("has_collection", "describe_collection", "load_collection", "insert"):
            self._wrap(monkeypatch, MilvusClient, name)
        for name in ("upsert", "delete"):
            self._wrap(monkeypatch, MilvusClient, name)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, cls: Any, name: str) -> None:
        original = getattr(cls, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.names[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, counted)

    @property
    def total(self) -> int:
        return sum(self.names.values())


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    yield Calls(monkeypatch)


def test_a_warm_search_on_lite_is_one_round_trip(filled: MilvusIndex, calls: Calls) -> None:
    """Milvus runs the BM25 search; the dense leg, the cosines and the hits'
    fields come from the ledger's copy of the collection."""
    filled.search("redis host", unit_vector("redis host"), 5)  # warms the centroid
    for query in ("redis host", "webhook clock pins", "nightly invoices bucket"):
        calls.names.clear()
        _, hits = filled.search(query, unit_vector(query), 5)
        assert hits and all(hit.chunk.content for hit in hits)
        assert calls.names == Counter(search=1)
    calls.names.clear()
    filled.search("redis cache", None, 5)
    assert calls.names == Counter(search=1)
    calls.names.clear()
    _, hits = filled.search("", unit_vector("redis"), 5, lexical=False)
    assert hits and calls.names == Counter()  # semantic only: no round trip
    calls.names.clear()
    filled.search("redis", unit_vector("redis"), 5, SearchFilters(kind="journal"))
    assert calls.names == Counter(search=1)  # the filter's rows read in the ledger


def test_a_ledger_without_the_copy_searches_in_milvus_until_it_is_filled(
    filled: MilvusIndex, lite_db: Path, collection: str, ledger_path: Path, calls: Calls
) -> None:
    """A ledger written before the copy existed: its searches take both legs
    from Milvus, with the same scores, until a comparison fills the copy."""
    queries = ("redis host", "webhook clock pins", "nightly invoices bucket")
    filters = [None, SearchFilters(kind="journal")]
    expected = [scores(filled, q, f) for q in queries for f in filters]
    filled.close()
    with sqlite3.connect(ledger_path) as conn:
        conn.execute("DELETE FROM replica")
    older = open_index(lite_db, collection, ledger_path)
    try:
        older.ensure_model(MODEL, DIM)
        assert older.word_counts(["redis"]) is not None  # compared: the copy is filled
        with sqlite3.connect(ledger_path) as conn:
            assert conn.execute("SELECT count(*) FROM replica").fetchone() == (6,)
            conn.execute("DELETE FROM replica WHERE rowid IN (SELECT min(rowid) FROM replica)")
        calls.names.clear()
        got = [scores(older, q, f) for q in queries for f in filters]
        for one, other in zip(got, expected, strict=True):
            assert_same(one, other)
        assert calls.names["search"] == 2 * len(got)  # one row without its copy: both legs
    finally:
        older.close()
    again = open_index(lite_db, collection, ledger_path)  # a new process compares
    try:
        again.ensure_model(MODEL, DIM)
        calls.names.clear()
        got = [scores(again, q, f) for q in queries for f in filters]
        for one, other in zip(got, expected, strict=True):
            assert_same(one, other)
        assert calls.names["search"] == len(got)
    finally:
        again.close()


def test_a_files_write_does_not_scan_its_source(
    filled: MilvusIndex, calls: Calls, tmp_path: Path
) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), ["redis only now"])
    filled.replace_file(record, chunks, vectors_for(chunks))
    filled.remove_files([src(tmp_path, "b.md")])
    assert calls.names["query"] == 0
    assert calls.names["query_iterator"] == 0
    # On Lite the mirror is exact: a new row is inserted, never looked up
    # in every segment first (an upsert), and stale rows go by key.
    assert calls.names["insert"] == 1
    assert calls.names["upsert"] == 0
    assert calls.names["delete"] == 2
    assert filled.word_counts(["redis", "webhook"]) == (3, {"redis": 2, "webhook": 0})


def test_words_split_as_milvus_lite_does() -> None:
    """The mirror's words are exactly Milvus Lite's standard analyzer's."""
    from milvus_lite.analyzer.standard import StandardAnalyzer

    text = "Über-Café déjà_vu 5.0 don't naïve ЖУК x2 e.g. snake_case CamelCase"
    assert search.analyzed(text) == StandardAnalyzer().tokenize(text)
    assert mirror.terms_of(text) == sorted(set(StandardAnalyzer().tokenize(text)))


def test_superseders_ask_milvus_only_for_hashes_some_row_holds(
    filled: MilvusIndex, calls: Calls, tmp_path: Path
) -> None:
    from memlane.core.supersede import supersedes_marker
    from memlane.core.types import content_hash_of

    old = content_hash_of(NOTES["a.md"][0])
    unknown = content_hash_of("never written")
    assert filled.superseders([old, unknown]) == {}
    assert calls.total == 0  # no row holds a marker: nothing asked
    newer = f"redis holds sessions and carts now {supersedes_marker(old)}"
    record, chunks = make_file(src(tmp_path, "n.md"), [newer])
    filled.replace_file(record, chunks, vectors_for(chunks))
    calls.names.clear()
    found = filled.superseders([old, unknown])
    assert list(found) == [old]
    assert found[old].content == newer
    assert calls.names == Counter(query=1)
