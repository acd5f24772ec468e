"""A full lexical pool ranked from the query's rare words first
(index/legs/score_bound.py): the split and the bound, then the SQLite leg
against FTS5 ranking every match."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import tempfile
from pathlib import Path

import pytest
from _builders import DIM, MODEL, make_file, src
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.index.legs import lexical, score_bound
from memlane.index.sqlite.notes import SqliteIndex


def test_the_rarest_words_go_first_within_their_share() -> None:
    plan = score_bound.split(
        ["common", "rare", "middle"], [900, 30, 200], [1.0, 5.0, 2.0], pool=20, total_docs=10_000
    )
    assert plan is not None
    # 30 + 200 of 1,130 matches is within the share; adding 900 is not.
    assert plan.rare == ("rare", "middle")
    assert plan.bound == (score_bound.BM25_K1 + 1) * 1.0


def test_no_split_when_it_cannot_pay_off() -> None:
    assert score_bound.split(["only"], [50], [3.0], pool=20, total_docs=1000) is None
    # The rarest word alone holds most of the matches.
    assert score_bound.split(["a", "b"], [500, 400], [1.0, 1.2], 20, 10_000) is None
    # The rare words hold fewer matches than the pool asks for.
    assert score_bound.split(["a", "b", "c"], [1000, 5, 6], [0.5, 6.0, 6.0], 20, 10_000) is None
    # The others could add more than half what the rarest word could score.
    assert score_bound.split(["a", "b", "c"], [1000, 30, 40], [3.0, 4.0, 3.9], 20, 10_000) is None


def test_words_in_most_chunks_leave_a_smaller_share_to_the_rare_ones() -> None:
    # 900 matches summed, but the store has 700 chunks: at most 280 rare matches.
    words, freqs, idfs = ["a", "b"], [600, 300], [0.1, 1.0]
    assert score_bound.split(words, freqs, idfs, 20, total_docs=700) is None
    assert score_bound.split(words, freqs, idfs, 20, total_docs=10_000) is not None


@given(
    st.lists(
        st.tuples(st.integers(1, 5000), st.floats(1e-6, 12.0, allow_nan=False)),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 60),
    st.integers(1, 20_000),
)
def test_the_split_keeps_a_word_out_and_bounds_exactly_the_others(
    stats: list[tuple[int, float]], pool: int, total_docs: int
) -> None:
    words = [f"w{i}" for i in range(len(stats))]
    freqs = [f for f, _ in stats]
    idfs = [w for _, w in stats]
    plan = score_bound.split(words, freqs, idfs, pool, total_docs)
    if plan is None:
        return
    rare = set(plan.rare)
    rest = [i for i, word in enumerate(words) if word not in rare]
    assert rest, "at least one word is left for the bound"
    held = sum(freqs[words.index(word)] for word in rare)
    assert pool <= held <= score_bound.RARE_SHARE * min(sum(freqs), total_docs)
    assert max(freqs[words.index(word)] for word in rare) <= min(freqs[i] for i in rest)
    assert plan.bound == pytest.approx((score_bound.BM25_K1 + 1) * sum(idfs[i] for i in rest))
    rarest = idfs[words.index(plan.rare[0])]
    assert (score_bound.BM25_K1 + 1) * rarest >= score_bound.PROMISE * plan.bound


@given(st.floats(0.0, 100.0), st.floats(0.0, 100.0))
def test_a_decisive_nth_score_leaves_room_below_it(nth: float, bound: float) -> None:
    if score_bound.decides(nth, bound):
        assert nth > bound
        assert score_bound.least_rare_score(nth, bound) + bound < nth
    else:
        assert nth <= bound * 1.001 + 1e-6


# A small vocabulary, common words to rare ones, repeated in runs: pools are
# full, the rare words sometimes decide and sometimes cannot, and short texts
# repeating a common word score near its bound.
VOCABULARY = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
WEIGHTS = [30, 24, 18, 12, 6, 3, 1.5, 0.8]


def corpus_of(rng: random.Random, size: int) -> list[str]:
    texts = []
    for _ in range(size):
        runs = rng.choices(VOCABULARY, weights=WEIGHTS, k=rng.randint(1, 4))
        texts.append(" ".join(" ".join([word] * rng.randint(1, 6)) for word in runs))
    return texts


def every_match(conn: sqlite3.Connection, match: str, n: int) -> list[tuple[int, float]]:
    """FTS5 ranking every match, as the leg did before the bound."""
    sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank, rowid LIMIT ?"
    return [(int(rowid), -float(rank)) for rowid, rank in conn.execute(sql, (match, n))]


def build(directory: Path, corpus: list[str]) -> Path:
    path = directory / "index.sqlite"
    with SqliteIndex(path) as index:
        index.ensure_model(MODEL, DIM)
        record, chunks = make_file(src(directory, "notes.md"), corpus)
        index.replace_file(record, chunks, {})
    return path


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(20, 160))
def test_the_decided_pool_is_every_match_ranking(rng: random.Random, size: int) -> None:
    corpus = corpus_of(rng, size)
    with tempfile.TemporaryDirectory() as directory:
        path = build(Path(directory), corpus)
        with contextlib.closing(sqlite3.connect(path)) as conn:
            lexical.install(conn)
            for _ in range(6):
                words = rng.sample(VOCABULARY, rng.randint(2, 5))
                query = lexical.LexicalLeg().prepare(conn, " ".join(words), cache_key=1)
                if query.match is None:
                    continue
                for n in (1, 5, 20):
                    decided = lexical.top_matches(conn, query, n, size)
                    if decided is not None:
                        assert decided == every_match(conn, query.match, n), (words, n)


def test_no_chunk_reaches_the_bound_of_a_word(tmp_path: Path) -> None:
    # Short texts repeating a word give its largest bm25 parts.
    corpus = ["delta " * count + "echo" * (count % 2) for count in range(1, 30)]
    corpus += [f"filler text number {i} about nothing in particular" for i in range(60)]
    corpus += ["kestrel"] * 3
    path = build(tmp_path, corpus)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        lexical.install(conn)
        for word in ("delta", "echo", "filler"):
            query = lexical.LexicalLeg().prepare(conn, f"kestrel {word}", cache_key=1)
            freqs = dict(zip(query.words, query.doc_freqs, strict=True))
            idfs = dict(zip(query.words, query.idfs, strict=True))
            plan = score_bound.split(
                ["kestrel", word],
                [freqs["kestrel"], freqs[word]],
                [idfs["kestrel"], idfs[word]],
                pool=1,
                total_docs=len(corpus),
            )
            assert plan is not None and plan.rare == ("kestrel",)
            parts = [
                -rank
                for (rank,) in conn.execute(
                    "SELECT rank FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)
                )
            ]
            assert max(parts) < plan.bound
            if word == "delta":  # repeated up to 29 times: close to the bound
                assert max(parts) > 0.9 * plan.bound


def test_rare_words_decide_a_large_pool_exactly(tmp_path: Path) -> None:
    # 400 notes say "deploy"; 40 of them also name the rare "kestrel" and
    # "ledger" in various counts and lengths.
    corpus = []
    for i in range(400):
        words = ["deploy"] * (1 + i % 3) + ["step"] * (i % 5)
        if i % 10 == 0:
            words += ["kestrel"] * (1 + i % 4) + ["ledger"] * (i % 3)
        corpus.append(" ".join(words))
    path = build(tmp_path, corpus)
    statements: list[str] = []
    with contextlib.closing(sqlite3.connect(path)) as conn:
        lexical.install(conn)
        query = lexical.LexicalLeg().prepare(conn, "kestrel ledger deploy", cache_key=1)
        assert query.match is not None
        conn.set_trace_callback(statements.append)
        decided = lexical.top_matches(conn, query, 20, len(corpus))
        conn.set_trace_callback(None)
        assert decided is not None
        assert decided == every_match(conn, query.match, 20)
    # The whole query was ranked only where the rare words put a chunk.
    assert not any("ORDER BY rank, rowid LIMIT" in s and "IN (" not in s for s in statements)


def test_a_query_its_rare_words_cannot_decide_is_left_to_every_match(tmp_path: Path) -> None:
    # "kestrel" is in 3 notes: too few to fill a pool of 20.
    corpus = ["deploy step"] * 200 + ["kestrel deploy"] * 3 + ["step step deploy"] * 50
    path = build(tmp_path, corpus)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        lexical.install(conn)
        query = lexical.LexicalLeg().prepare(conn, "kestrel step deploy", cache_key=1)
        assert lexical.top_matches(conn, query, 20, len(corpus)) is None
