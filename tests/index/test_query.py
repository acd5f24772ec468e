from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from memlane.index.legs import lexical
from memlane.index.legs.query import (
    LEXICAL_DOC_BUDGET,
    MAX_QUERY_TERMS,
    STOPWORDS,
    match_expression,
    prune_terms,
    query_terms,
)


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    c = sqlite3.connect(":memory:", isolation_level=None)
    c.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(heading, content)")
    lexical.install(c)
    yield c
    c.close()


def test_terms_deduplicated_stopwords_dropped() -> None:
    assert query_terms(["what", "is", "the", "redis", "ttl", "the", "redis"]) == ["redis", "ttl"]


def test_only_stopwords_are_kept() -> None:
    assert query_terms(["what", "is", "it"]) == ["what", "is", "it"]


def test_long_queries_are_capped() -> None:
    assert len(query_terms(f"w{i}" for i in range(500))) == MAX_QUERY_TERMS


def test_tokenize_matches_the_index_tokenizer(conn: sqlite3.Connection) -> None:
    tokens = lexical.tokenize(conn, 'NEAR(Café "x") AND -y:* hot_cache 項目記憶 🙂 e\u0301')
    # unicode61 (Unicode 6.1 tables) counts emoji as token characters; porter
    # stems English words on top ("cache" -> "cach")
    assert tokens == ["near", "cafe", "x", "and", "y", "hot", "cach", "項目記憶", "🙂", "e"]
    assert lexical.tokenize(conn, "meetings painted painting") == ["meet", "paint", "paint"]
    assert lexical.tokenize(conn, "") == []
    assert lexical.tokenize(conn, "?!* -- ()") == []


def test_match_expression_quotes_and_ors() -> None:
    assert match_expression(["near", "and", "x"]) == '"near" OR "and" OR "x"'
    assert match_expression([]) is None
    assert match_expression(['a"b']) == '"a""b"'


def test_prune_keeps_every_present_term_when_cheap() -> None:
    df = {"redis": 10, "agent": 900, "zzz": 0}
    assert prune_terms(["agent", "redis", "zzz", "nope"], df, 1000) == ["redis", "agent"]
    assert prune_terms(["zzz"], df, 1000) == []


def test_prune_drops_near_universal_terms_when_expensive() -> None:
    df = {"redis": 10, "agent": 900}
    assert prune_terms(["agent", "redis"], df, 1000, budget=500) == ["redis"]
    # only universal terms: the rarest one survives
    both = {"agent": 900, "user": 800}
    assert prune_terms(["agent", "user"], both, 1000, budget=500) == ["user"]


def test_prune_keeps_rarest_within_budget() -> None:
    df = {"a": 100, "b": LEXICAL_DOC_BUDGET - 100, "c": 50, "d": 1}
    assert prune_terms(["a", "b", "c", "d"], df, 10**7) == ["d", "c", "a"]
    assert prune_terms(["a", "c", "d"], df, 10**7) == ["d", "c", "a"]
    huge = {"x": LEXICAL_DOC_BUDGET * 3}
    assert prune_terms(["x"], huge, 10**7) == ["x"]  # the rarest is always kept


def test_stopwords_are_dropped_in_stemmed_form(conn: sqlite3.Connection) -> None:
    leg = lexical.LexicalLeg()
    stop = leg.stopwords(conn)
    assert {"was", "does", "this"} - STOPWORDS == set()
    tokens = lexical.tokenize(conn, "What was this painting she does")
    assert query_terms(tokens, stop) == ["paint", "she"]
