"""Search on the Milvus notes index against real Milvus Lite: modes, every
fusion, calibrated scores, filters as Milvus expressions, and the same
answers as the SQLite index given the same chunks and vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import DIM, MODEL, make_file, unit_vector, vectors_for
from _lite import open_index

from memlane.core.settings import IndexSettings
from memlane.core.types import Kind
from memlane.index.milvus.notes import MilvusIndex
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite.notes import SqliteIndex

DOCS = {
    "redis": "- the user and the agent moved the hot cache to Redis with 5 minute TTLs",
    "webhook": "- the agent fixed the flaky webhook test by pinning the clock",
    "postgres": "- the Postgres pool was raised to 40 connections after timeouts",
    "invoice": "- invoices are exported nightly as CSV to the finance bucket",
    "deploy": "- deploys go through the staging cluster before production on Fridays",
    "pager": "- the pager rotation moved to a weekly schedule with two people on call",
}
#: Directory names with what a prefix filter must take literally.
ODD_DIRS = {"invoice": 'odd%_"dir', "deploy": "oddXYdir"}
FUSIONS = ["evidence", "rrf", "wrrf", "convex"]


def source_of(root: Path, i: int, name: str) -> str:
    return str(root / ODD_DIRS.get(name, "memory") / f"2026-01-0{i + 1}.md")


def fill(index: MilvusIndex | SqliteIndex, root: Path) -> dict[str, str]:
    """One file per doc (dates 2026-01-01.., sessions s0/s1); name -> hash."""
    hashes = {}
    for i, (name, text) in enumerate(DOCS.items()):
        kind: Kind = "topic" if name == "invoice" else "journal"
        record, chunks = make_file(
            source_of(root, i, name),
            [text],
            kind=kind,
            date=f"2026-01-0{i + 1}",
            session=f"s{i % 2}",
        )
        index.replace_file(record, chunks, vectors_for(chunks))
        hashes[name] = chunks[0].chunk.chunk_hash
    return hashes


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, lite_db: Path
) -> tuple[Path, str, dict[str, str]]:
    """One filled collection shared by the module's read-only tests."""
    root = tmp_path_factory.mktemp("corpus")
    index = open_index(lite_db, "ms_search_corpus", root / "ledger.sqlite")
    index.ensure_model(MODEL, DIM)
    hashes = fill(index, root)
    index.close()
    return root, "ms_search_corpus", hashes


def searcher(lite_db: Path, corpus: tuple[Path, str, dict[str, str]], fusion: str) -> MilvusIndex:
    root, name, _ = corpus
    index = open_index(
        lite_db, name, root / f"ledger-{fusion}.sqlite", IndexSettings(fusion=fusion)
    )
    index.ensure_model(MODEL, DIM)
    return index


@pytest.mark.parametrize("fusion", FUSIONS)
def test_every_mode_with_every_fusion(
    lite_db: Path, corpus: tuple[Path, str, dict[str, str]], fusion: str
) -> None:
    hashes = corpus[2]
    index = searcher(lite_db, corpus, fusion)
    query_vector = unit_vector(DOCS["postgres"])
    mode, hits = index.search("postgres pool timeouts", query_vector, 3)
    assert mode == "hybrid"
    assert hits[0].chunk.chunk_hash == hashes["postgres"]
    mode, hits = index.search("postgres pool timeouts", None, 3)
    assert mode == "lexical"
    assert hits[0].chunk.chunk_hash == hashes["postgres"]
    mode, hits = index.search("", query_vector, 3, lexical=False)
    assert mode == "semantic"
    assert hits[0].chunk.chunk_hash == hashes["postgres"]
    for _, found in (index.search("webhook clock", unit_vector("x"), 6),):
        assert all(0.0 <= hit.score <= 1.0 for hit in found)
        assert [hit.score for hit in found] == sorted((hit.score for hit in found), reverse=True)
    index.close()


def test_evidence_scores_are_calibrated_and_fall_with_rank(
    lite_db: Path, corpus: tuple[Path, str, dict[str, str]]
) -> None:
    index = searcher(lite_db, corpus, "evidence")
    _, hits = index.search("redis cache TTLs", unit_vector(DOCS["redis"]), 6)
    scores = [hit.score for hit in hits]
    assert len(hits) >= 2
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1]
    # A query the store cannot answer scores low on the same scale.
    _, unrelated = index.search("quantum chromodynamics lecture", unit_vector("nothing"), 3)
    assert all(hit.score < scores[0] for hit in unrelated)
    index.close()


@pytest.mark.parametrize(
    ("query", "vector_of"),
    [
        ("redis cache", "redis"),
        ("flaky webhook test", "webhook"),
        ("finance bucket csv", "invoice"),
        ("who is on call", "pager"),
    ],
)
def test_the_same_top_hit_as_the_sqlite_index(
    lite_db: Path,
    corpus: tuple[Path, str, dict[str, str]],
    tmp_path: Path,
    query: str,
    vector_of: str,
) -> None:
    milvus = searcher(lite_db, corpus, "evidence")
    sqlite = SqliteIndex(tmp_path / "ms.sqlite")
    sqlite.ensure_model(MODEL, DIM)
    fill(sqlite, corpus[0])
    for vector in (unit_vector(DOCS[vector_of]), None):
        m_mode, m_hits = milvus.search(query, vector, 3)
        s_mode, s_hits = sqlite.search(query, vector, 3)
        assert m_mode == s_mode
        assert m_hits[0].chunk.chunk_hash == s_hits[0].chunk.chunk_hash
        assert m_hits[0].score == pytest.approx(s_hits[0].score, abs=0.05)
    sqlite.close()
    milvus.close()


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters(kind="topic"), {"invoice"}),
        (SearchFilters(session="s1"), {"webhook", "invoice", "pager"}),
        (SearchFilters(after="2026-01-03", before="2026-01-05"), {"postgres", "invoice"}),
        (SearchFilters(after="2026-01-06"), {"pager"}),
        (SearchFilters(kind="journal", before="2026-01-02"), {"redis"}),
    ],
)
def test_filters(
    lite_db: Path,
    corpus: tuple[Path, str, dict[str, str]],
    filters: SearchFilters,
    expected: set[str],
) -> None:
    hashes = corpus[2]
    index = searcher(lite_db, corpus, "evidence")
    query = " ".join(DOCS.values())
    for vector in (unit_vector("any"), None):
        _, hits = index.search(query, vector, 10, filters)
        names = {name for name, h in hashes.items() if h in {hit.chunk.chunk_hash for hit in hits}}
        assert names == expected
    index.close()


def test_a_source_prefix_is_taken_literally(
    lite_db: Path, corpus: tuple[Path, str, dict[str, str]]
) -> None:
    root, _, hashes = corpus
    index = searcher(lite_db, corpus, "evidence")
    query = " ".join(DOCS.values())

    def found(prefix: str) -> set[str]:
        _, hits = index.search(query, unit_vector("q"), 10, SearchFilters(source_prefix=prefix))
        got = {hit.chunk.chunk_hash for hit in hits}
        return {name for name, h in hashes.items() if h in got}

    # '%' and '_' are no wildcards, '"' ends no string.
    assert found(str(root / 'odd%_"dir')) == {"invoice"}
    assert found(str(root / "odd%")) == {"invoice"}
    assert found(str(root / "odd")) == {"invoice", "deploy"}
    assert found(str(root / "odd_")) == set()
    assert found(str(root / "memory") + "/") == set(DOCS) - {"invoice", "deploy"}
    index.close()


def test_an_empty_collection_or_query_finds_nothing(milvus_index: MilvusIndex) -> None:
    # As on SQLite: no stored vector, no dense leg.
    assert milvus_index.search("anything", unit_vector("a"), 3) == ("lexical", [])
    assert milvus_index.search("anything", None, 3) == ("lexical", [])


def test_a_common_words_frequency_is_estimated_past_the_probe_cap(
    milvus_index: MilvusIndex,
    lite_db: Path,
    collection: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the ledger's mirror is not trusted (a fresh ledger that may not
    fetch the rows in a search), a word the probe finds at its cap is counted
    on a sixteenth of the rows (chunk hashes are uniform hex) and scaled: its
    idf stays near the truth instead of being that of a word in exactly
    ``DF_PROBE_LIMIT`` rows. The mirror counts it exactly."""
    from memlane.index.milvus import mirror, search

    monkeypatch.setattr(search, "DF_PROBE_LIMIT", 40)
    for n in range(16):
        texts = [f"common note {n} {i} rare{n * 20 + i}" for i in range(20)]
        # Sources that do not depend on the run's temporary directory: the
        # chunk hashes, so the sixteenth sampled, are the same in every run
        # (from tmp_path, 1 run in ~250 sampled under 10 of the 320 rows).
        record, chunks = make_file(f"/project/.memsearch/memory/f{n}.md", texts)
        milvus_index.replace_file(record, chunks, vectors_for(chunks))
    assert milvus_index.count() == 320
    assert milvus_index.word_counts(["common", "rare7"]) == (320, {"common": 320, "rare7": 1})
    monkeypatch.setattr(mirror, "SEARCH_FETCH_MAX", 0)
    probing = open_index(lite_db, collection, tmp_path / "probing.sqlite")
    probing.search("common rare7", unit_vector("common rare7"), 5)
    freq = probing.document_frequencies(320)
    assert freq["rare7"] == 1
    # Found 40 times (the cap), measured about 320: a sample of ~20 rows, so
    # well above the cap and never above the row count.
    assert 160 <= freq["common"] <= 320
    probing.close()
