"""Hybrid and lexical search: modes, scores, filters, hostile queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _builders import DIM, make_chunk, make_file, src, unit_vector, vectors_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.core.types import Kind
from memlane.index.legs import query as query_mod
from memlane.index.protocol import FileRecord, IndexedChunk, SearchFilters
from memlane.index.sqlite.notes import SqliteIndex

DOCS = {
    "redis": "- the user and the agent moved the hot cache to Redis with 5 minute TTLs",
    "webhook": "- the agent fixed the flaky webhook test by pinning the clock",
    "postgres": "- the Postgres pool was raised to 40 connections after timeouts",
    "invoice": "- invoices are exported nightly as CSV to the finance bucket",
    "cafe": "- the café menu page now renders accents correctly: résumé, naïve",
    "cjk": "- 项目记忆 uses Redis too",
}


def build(index: SqliteIndex, tmp_path: Path, *, with_vectors: bool = True) -> dict[str, str]:
    """One file per doc; returns name -> chunk hash."""
    hashes = {}
    for i, (name, text) in enumerate(DOCS.items()):
        kind: Kind = "topic" if name == "invoice" else "journal"
        record, chunks = make_file(
            src(tmp_path, f"2026-01-0{i + 1}.md"),
            [text],
            kind=kind,
            date=f"2026-01-0{i + 1}",
            session=f"s{i % 2}",
        )
        index.replace_file(record, chunks, vectors_for(chunks) if with_vectors else {})
        hashes[name] = chunks[0].chunk.chunk_hash
    return hashes


def vec_of(name: str) -> np.ndarray:
    return unit_vector(DOCS[name])


def test_hybrid_match_in_both_legs_scores_near_one(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    mode, hits = index.search("Redis cache TTL", vec_of("redis"), 3)
    assert mode == "hybrid"
    assert hits[0].chunk.chunk_hash == hashes["redis"]
    assert hits[0].score > 0.99
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) == 3


def test_lexical_mode_without_vector(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    mode, hits = index.search("flaky webhook", None, 5)
    assert mode == "lexical"
    assert [h.chunk.chunk_hash for h in hits] == [hashes["webhook"]]
    # every query word matched: full coverage, near-certain relevance
    assert hits[0].score > 0.99


def test_lexical_mode_when_index_holds_no_vectors(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path, with_vectors=False)
    mode, hits = index.search("postgres timeouts", unit_vector("q"), 5)
    assert mode == "lexical"
    assert hits[0].chunk.chunk_hash == hashes["postgres"] and hits[0].score > 0.99


def test_dense_only_match_is_found_in_hybrid(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    # no lexical overlap at all: only the dense leg can find it
    mode, hits = index.search("zzzz", vec_of("invoice"), 1)
    assert mode == "hybrid"
    assert hits[0].chunk.chunk_hash == hashes["invoice"]
    # the query's vector is the note's own (cosine 1): the lexical leg finding
    # nothing does not make that match any less relevant
    assert hits[0].score > 0.99


def test_empty_query_and_k_zero_return_nothing(index: SqliteIndex, tmp_path: Path) -> None:
    build(index, tmp_path)
    assert index.search("", vec_of("redis"), 5) == ("hybrid", [])
    assert index.search("   ", None, 5) == ("lexical", [])
    assert index.search("redis", None, 0) == ("lexical", [])
    assert index.search("nothingmatcheshere", None, 5) == ("lexical", [])


def test_empty_index(index: SqliteIndex) -> None:
    assert index.search("redis", unit_vector("q"), 5) == ("lexical", [])
    assert index.search("redis", None, 5) == ("lexical", [])


def test_diacritics_and_case_fold(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    for query in ("CAFE resume", "naive", "Café"):
        _, hits = index.search(query, None, 3)
        assert hits and hits[0].chunk.chunk_hash == hashes["cafe"], query


def test_cjk_query(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    _, hits = index.search("项目记忆", None, 3)
    assert [h.chunk.chunk_hash for h in hits] == [hashes["cjk"]]


def test_heading_is_searchable(index: SqliteIndex, tmp_path: Path) -> None:
    source = src(tmp_path, "topics/db.md")
    chunk = make_chunk(source, 0, "- body text only", heading="Database migrations")
    index.replace_file(FileRecord(source, 1, 1, "d"), [chunk], {})
    _, hits = index.search("migrations", None, 3)
    assert [h.chunk.chunk_hash for h in hits] == [chunk.chunk.chunk_hash]


@pytest.mark.parametrize("use_vector", [False, True])
def test_filters_apply_to_both_legs(index: SqliteIndex, tmp_path: Path, use_vector: bool) -> None:
    hashes = build(index, tmp_path)
    vector = vec_of("redis") if use_vector else None
    query = "redis postgres invoices webhook café"

    def found(filters: SearchFilters) -> set[str]:
        _, hits = index.search(query, vector, 10, filters)
        names = {h: n for n, h in hashes.items()}
        return {names[h.chunk.chunk_hash] for h in hits}

    assert found(SearchFilters(kind="topic")) == {"invoice"}
    assert found(SearchFilters(kind="session")) == set()
    assert found(SearchFilters(after="2026-01-03")) == {"postgres", "invoice", "cafe", "cjk"}
    assert found(SearchFilters(before="2026-01-03")) == {"redis", "webhook"}
    assert found(SearchFilters(after="2026-01-02", before="2026-01-04")) == {"webhook", "postgres"}
    assert found(SearchFilters(session="s1")) == {"webhook", "invoice", "cjk"}
    assert found(SearchFilters(session="nope")) == set()
    prefix = src(tmp_path, "2026-01-05")
    assert found(SearchFilters(source_prefix=prefix)) == {"cafe"}
    assert found(SearchFilters(source_prefix=src(tmp_path, "2026-01-0"))) == set(DOCS)
    assert found(SearchFilters(source_prefix="/%")) == set()  # no LIKE wildcards
    assert found(SearchFilters(kind="journal", session="s0", after="2026-01-02")) == {
        "postgres",
        "cafe",
    }


def test_chunks_without_date_fail_date_filters(index: SqliteIndex, tmp_path: Path) -> None:
    source = src(tmp_path, "MEMORY.md")
    record, chunks = make_file(source, ["- redis everywhere"])
    index.replace_file(record, chunks, vectors_for(chunks))
    q = unit_vector("- redis everywhere")
    assert index.search("redis", q, 5, SearchFilters(after="2000-01-01"))[1] == []
    assert index.search("redis", q, 5, SearchFilters(before="2999-01-01"))[1] == []
    assert len(index.search("redis", q, 5, SearchFilters(kind="journal"))[1]) == 1


def test_ties_are_deterministic(index: SqliteIndex, tmp_path: Path) -> None:
    # identical content in many files: same bm25, same vector
    for i in range(8):
        record, chunks = make_file(src(tmp_path, f"f{i}.md"), ["- identical bullet about redis"])
        index.replace_file(record, chunks, vectors_for(chunks))
    q = unit_vector("- identical bullet about redis")
    first = index.search("redis", q, 5)
    for _ in range(3):
        assert index.search("redis", q, 5) == first
    sources = [h.chunk.source for h in first[1]]
    assert sources == [src(tmp_path, f"f{i}.md") for i in range(5)]


def test_k_larger_than_collection(index: SqliteIndex, tmp_path: Path) -> None:
    build(index, tmp_path)
    _, hits = index.search("redis", vec_of("redis"), 100)
    assert len(hits) == len(DOCS)  # every doc comes through the dense leg


HOSTILE = [
    '"',
    '""',
    "'",
    "(",
    ")",
    "redis)",
    "(redis",
    "*",
    "redis*",
    "-redis",
    "- redis",
    ":",
    "heading:redis",
    "content:",
    "NEAR",
    "NEAR(redis postgres)",
    "NEAR(redis postgres, 2)",
    "AND",
    "OR",
    "NOT",
    "redis AND",
    "redis OR OR postgres",
    "NOT redis",
    "^redis",
    "{heading content}: redis",
    "🙂",
    "🙂 redis 🚀",
    "项目",
    "",
    "\x00",
    "redis\x00postgres",
    "\\",
    "a" * 5000,
    "_",
    "__init__",
    "e\u0301",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(index: SqliteIndex, tmp_path: Path, query: str) -> None:
    hashes = build(index, tmp_path)
    mode, hits = index.search(query, None, 5)
    assert mode == "lexical"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    found = {h.chunk.chunk_hash for h in hits}
    if "redis" in query:  # the word itself still matches, whatever surrounds it
        assert {hashes["redis"], hashes["cjk"]} <= found, query
    # Nothing in it is an operator that could cancel a real word beside it.
    _, beside = index.search(query + " webhook", None, 5)
    assert hashes["webhook"] in {h.chunk.chunk_hash for h in beside}, query
    mode, hits = index.search(query, vec_of("redis"), 5)
    assert mode == "hybrid"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    if not query.strip():
        assert hits == []  # no text, no search (test_empty_query_and_k_zero_return_nothing)
        return
    assert len(hits) == 5  # the dense leg answers whatever the text
    assert hashes["redis"] in {h.chunk.chunk_hash for h in hits}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.text(max_size=80))
def test_arbitrary_text_never_raises(index: SqliteIndex, tmp_path: Path, query: str) -> None:
    if index.count() == 0:
        build(index, tmp_path)
    mode, hits = index.search(query, None, 5)
    assert mode == "lexical"
    assert len(hits) <= 5
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    # Whatever the text, it cannot stop a real word beside it from matching.
    _, hits = index.search(query + " flaky webhook", None, 5)
    assert any(h.chunk.content == DOCS["webhook"] for h in hits), query


def test_scores_bounded_on_bigger_random_collection(index: SqliteIndex, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    words = ["redis", "cache", "ttl", "postgres", "pool", "webhook", "test", "clock", "csv"]
    all_chunks: list[IndexedChunk] = []
    for f in range(20):
        texts = [" ".join(rng.choice(words, size=6)) + f" n{f}x{i}" for i in range(10)]
        record, chunks = make_file(src(tmp_path, f"f{f}.md"), texts)
        index.replace_file(record, chunks, vectors_for(chunks, DIM))
        all_chunks += chunks
    for _ in range(20):
        q = " ".join(rng.choice(words, size=2))
        mode, hits = index.search(q, unit_vector(q), 10)
        assert mode == "hybrid" and len(hits) == 10
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert len({h.chunk.chunk_hash for h in hits}) == 10


def test_near_universal_terms_do_not_make_everything_a_candidate(
    index: SqliteIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_mod, "LEXICAL_DOC_BUDGET", 10)
    texts = [f"- the agent did task {i}" for i in range(30)] + ["- the agent tuned redis"]
    record, chunks = make_file(src(tmp_path, "a.md"), texts)
    index.replace_file(record, chunks, {})
    _, hits = index.search("agent redis", None, 10)
    assert [h.chunk.content for h in hits] == ["- the agent tuned redis"]
    # a query of only near-universal words still answers, from its rarest term
    _, hits = index.search("agent", None, 3)
    assert len(hits) == 3


def test_small_collections_are_never_pruned(index: SqliteIndex, tmp_path: Path) -> None:
    texts = ["- redis here", "- redis there", "- postgres only"]
    record, chunks = make_file(src(tmp_path, "a.md"), texts)
    index.replace_file(record, chunks, {})
    _, hits = index.search("redis postgres", None, 5)
    assert len(hits) == 3  # "redis" is in 2 of 3 chunks and still counts


def test_term_statistics_follow_writes(index: SqliteIndex, tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "a.md"), ["- alpha one", "- beta two"])
    index.replace_file(record, chunks, {})
    assert index.search("gamma", None, 3)[1] == []  # caches df(gamma) = 0
    record, chunks = make_file(src(tmp_path, "b.md"), ["- gamma three"])
    index.replace_file(record, chunks, {})
    assert [h.chunk.content for h in index.search("gamma", None, 3)[1]] == ["- gamma three"]


def test_semantic_mode_skips_the_lexical_leg(index: SqliteIndex, tmp_path: Path) -> None:
    hashes = build(index, tmp_path)
    mode, hits = index.search("Redis cache TTL", vec_of("invoice"), 2, lexical=False)
    assert mode == "semantic"
    assert hits[0].chunk.chunk_hash == hashes["invoice"]
    assert hits[0].score > 0.99
    with pytest.raises(ValueError):
        index.search("redis", None, 2, lexical=False)


@pytest.mark.parametrize("fusion", ["rrf", "wrrf", "convex"])
def test_every_fusion_keeps_scores_in_bounds(tmp_path: Path, fusion: str) -> None:
    from memlane.core.settings import IndexSettings

    with SqliteIndex(tmp_path / "f.sqlite", IndexSettings(fusion=fusion, alpha=0.3)) as idx:
        hashes = build(idx, tmp_path)
        mode, hits = idx.search("Redis cache TTL", vec_of("redis"), 5)
        assert mode == "hybrid"
        assert hits[0].chunk.chunk_hash == hashes["redis"] and hits[0].score == 1.0
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        _, lexical_only = idx.search("flaky webhook", None, 5)
        assert lexical_only[0].score == 1.0


def test_alpha_out_of_range_is_a_config_error(tmp_path: Path) -> None:
    from memlane.core.errors import ConfigError
    from memlane.core.settings import IndexSettings

    with pytest.raises(ConfigError):
        SqliteIndex(tmp_path / "a.sqlite", IndexSettings(fusion="convex", alpha=1.5))
