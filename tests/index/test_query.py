from __future__ import annotations

from memlane.index.query import MAX_QUERY_TERMS, fts_match_expression, query_terms


def test_terms_lowercased_deduplicated_stopwords_dropped() -> None:
    assert query_terms("What is the Redis TTL? the redis ttl!") == ["redis", "ttl"]


def test_only_stopwords_are_kept() -> None:
    assert query_terms("what is it") == ["what", "is", "it"]


def test_every_term_is_quoted_and_ored() -> None:
    assert fts_match_expression('NEAR(a b) OR "x" AND -y:*') == '"near" OR "b" OR "x" OR "y"'


def test_no_words_no_expression() -> None:
    assert fts_match_expression("") is None
    assert fts_match_expression("  ?!* 🙂 ") is None


def test_cjk_run_is_one_term() -> None:
    assert query_terms("项目记忆 redis") == ["项目记忆", "redis"]


def test_long_queries_are_capped() -> None:
    text = " ".join(f"word{i}" for i in range(500))
    assert len(query_terms(text)) == MAX_QUERY_TERMS
