"""The ONNX embedder with the real bundled model (loaded once per session)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.core.errors import EmbedderError
from memlane.core.settings import BUNDLED_MODEL_NAME, EmbeddingSettings
from memlane.embed.base import Embedder
from memlane.embed.factory import bundled_model_files, make_embedder
from memlane.embed.onnx import OnnxEmbedder, loaded_model_count

MIXED_TEXTS = [
    "",
    "x",
    "The cat sat on the mat.",
    "We moved the hot cache to Redis with 5 minute TTLs because p95 latency rose to 840 ms.",
    "¿Dónde está la biblioteca? 图书馆在哪里? ✨ emoji 🎉",
    "def retry(fn):\n    for delay in (0.2, 0.5, 1.0):\n        time.sleep(delay)\n",
    "- the agent fixed the webhook handler after a flaky test in CI\n" * 40,
    "lorem ipsum dolor sit amet " * 500,
    "   \n\t  ",
    "Short one.",
    "A medium length sentence about migrating the Postgres pool to pgbouncer in session mode.",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))  # rows are unit vectors


def test_bundled_model_gives_384_dim_unit_vectors(bundled: OnnxEmbedder) -> None:
    vectors = bundled.embed(MIXED_TEXTS)
    assert vectors.shape == (len(MIXED_TEXTS), 384)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert bundled.dimension == 384
    assert bundled.name == BUNDLED_MODEL_NAME == "all-MiniLM-L6-v2"
    assert isinstance(bundled, Embedder)


@pytest.mark.parametrize(
    ("anchor", "related", "unrelated"),
    [
        (
            "The cat sat on the mat.",
            "A kitten was resting on the rug.",
            "The quarterly tax filing deadline is in April.",
        ),
        (
            "We moved the hot cache to Redis with 5 minute TTLs.",
            "Caching now uses Redis and entries expire after five minutes.",
            "The user prefers tabs over spaces in Go files.",
        ),
        (
            "How do I reset my password?",
            "I forgot my login credentials and need to change them.",
            "The recipe needs two cups of flour and one egg.",
        ),
        (
            "The webhook handler retries when the upstream API returns HTTP 429.",
            "When the remote service rate limits us, the webhook code tries again later.",
            "Chocolate cake with fresh raspberries for the birthday party.",
        ),
    ],
)
def test_related_sentences_score_higher(
    bundled: OnnxEmbedder, anchor: str, related: str, unrelated: str
) -> None:
    a, r, u = bundled.embed([anchor, related, unrelated])
    assert cosine(a, r) > cosine(a, u) + 0.2, (cosine(a, r), cosine(a, u))


def test_query_ranks_the_relevant_memory_first(bundled: OnnxEmbedder) -> None:
    memories = [
        "- the user and the agent moved the hot cache to Redis with 5 minute TTLs",
        "- the agent renamed the CSV importer module to ingest",
        "- the user wants commit messages in the imperative mood",
        "- they pinned numpy below 2 because the ONNX exporter broke",
    ]
    matrix = bundled.embed(memories)
    scores = matrix @ bundled.embed_query("which cache backend do we use and what TTL?")
    assert int(np.argmax(scores)) == 0, scores


def test_batch_equals_one_by_one(bundled: OnnxEmbedder) -> None:
    together = bundled.embed(MIXED_TEXTS)
    alone = np.stack([bundled.embed([text])[0] for text in MIXED_TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_order_is_restored_whatever_the_input_order(bundled: OnnxEmbedder) -> None:
    baseline = bundled.embed(MIXED_TEXTS)
    order = list(range(len(MIXED_TEXTS)))
    random.Random(7).shuffle(order)
    shuffled = bundled.embed([MIXED_TEXTS[i] for i in order])
    np.testing.assert_allclose(shuffled, baseline[order], atol=1e-4)


def test_small_batches_and_token_cap_give_the_same_vectors(verify_cache_dir: Path) -> None:
    # The shipped float model batches as asked (the int8 derivation runs one
    # text per batch whatever batch_size says, so it cannot show this).
    big = OnnxEmbedder.bundled(derive=None, verify_cache_dir=verify_cache_dir)
    big.warm()
    sessions = loaded_model_count()
    tiny = OnnxEmbedder.bundled(
        derive=None, batch_size=3, max_batch_tokens=300, verify_cache_dir=verify_cache_dir
    )
    tiny.warm()
    assert loaded_model_count() == sessions  # same files: the session is shared
    assert (big.batch_size, tiny.batch_size) == (32, 3)
    short = [text for text in MIXED_TEXTS if len(text) < 200]
    texts = MIXED_TEXTS + short * 5  # > one tokenisation window of 3 x 16 texts
    vectors = dict(zip(MIXED_TEXTS, big.embed(MIXED_TEXTS), strict=True))
    expected = np.stack([vectors[text] for text in texts])
    np.testing.assert_allclose(tiny.embed(texts), expected, atol=1e-4)


def test_concurrent_batches_equal_sequential_ones(bundled: OnnxEmbedder) -> None:
    texts = MIXED_TEXTS * 2  # the int8 model: one batch per text, 22 batches
    sequential = OnnxEmbedder.bundled(threads=1).embed(texts)
    parallel = OnnxEmbedder.bundled(threads=3).embed(texts)
    np.testing.assert_allclose(parallel, sequential, atol=1e-5)


def test_memory_release_after_a_big_call_keeps_the_session_usable(
    bundled: OnnxEmbedder,
) -> None:
    before = bundled.embed_query("still works")
    bundled.embed(MIXED_TEXTS)  # several batches: embed releases memory after them
    bundled.release_memory()  # and a host may ask for it too
    np.testing.assert_allclose(bundled.embed_query("still works"), before, atol=1e-6)
    np.testing.assert_allclose(
        bundled.embed(MIXED_TEXTS[:3]), bundled.embed(MIXED_TEXTS)[:3], atol=1e-6
    )


def test_release_memory_before_loading_loads_nothing(tmp_path: Path) -> None:
    ghost = OnnxEmbedder(tmp_path / "no.onnx", tmp_path / "no.json", name="ghost")
    ghost.release_memory()  # no model file: loading it would raise
    assert not ghost.loaded


def test_embed_query_is_one_row_of_embed(bundled: OnnxEmbedder) -> None:
    query = "what did we decide about retries?"
    vector = bundled.embed_query(query)
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector, bundled.embed([query])[0], atol=1e-6)


def test_very_long_text_is_truncated(bundled: OnnxEmbedder) -> None:
    sentence = "the agent traced the flaky invoice exporter test to a timezone bug. "
    huge = sentence * 20_000  # 1.3 MB: far past 256 tokens and the character cap
    prefix = sentence * 40  # ~560 tokens: still past the 256-token cut
    vectors = bundled.embed([huge, prefix])
    np.testing.assert_allclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)


def test_max_tokens_overrides_the_tokenizer_files_truncation(bundled: OnnxEmbedder) -> None:
    # tokenizer.json itself truncates at 128; with max_tokens 256 a change
    # after token ~150 must still move the vector.
    head = "alpha beta gamma delta " * 37  # 148 words, ~150 tokens
    a, b = bundled.embed([head + "red apples and pears", head + "compiler error in rust"])
    assert cosine(a, b) < 0.9999
    short = OnnxEmbedder.bundled(max_tokens=8)
    c, d = short.embed([head + "red apples", head + "compiler error"])
    np.testing.assert_allclose(c, d, atol=1e-6)


def test_lone_surrogates_do_not_fail_the_batch(bundled: OnnxEmbedder) -> None:
    bad = "log line with a broken byte \udcff in it"
    vectors = bundled.embed(["clean text", bad])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_never_touches_the_model(tmp_path: Path) -> None:
    ghost = OnnxEmbedder(tmp_path / "no.onnx", tmp_path / "no.json", name="ghost")
    assert ghost.embed([]).shape == (0, 0)
    known = OnnxEmbedder(tmp_path / "no.onnx", tmp_path / "no.json", name="g", dimension=384)
    assert known.embed([]).shape == (0, 384)
    assert known.embed([]).dtype == np.float32


def test_a_plain_string_is_refused(bundled: OnnxEmbedder) -> None:
    with pytest.raises(TypeError, match="embed_query"):
        bundled.embed("not a list")
    with pytest.raises(TypeError, match="NoneType"):
        bundled.embed(["fine", None])  # type: ignore[list-item]


def test_embedders_with_the_same_files_share_one_session(bundled: OnnxEmbedder) -> None:
    first = make_embedder(EmbeddingSettings())
    assert isinstance(first, OnnxEmbedder)
    first.warm()  # the session for these files (already loaded, or now)
    sessions = loaded_model_count()
    again = make_embedder(EmbeddingSettings(batch_size=4))
    assert isinstance(again, OnnxEmbedder) and not again.loaded
    again.warm()
    assert again.loaded and loaded_model_count() == sessions
    np.testing.assert_allclose(again.embed_query("same"), bundled.embed_query("same"))


# ---- user model directory -------------------------------------------------


def test_user_model_directory_works(user_model_dir: Path, verify_cache_dir: Path) -> None:
    settings = EmbeddingSettings(path=str(user_model_dir), model="my-minilm")
    embedder = make_embedder(settings)
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.name == "my-minilm"
    assert embedder.dimension is None  # unknown until the model is loaded
    vectors = embedder.embed(MIXED_TEXTS[:4])
    assert embedder.dimension == 384
    # Same files, mean pooling: the same vectors as the bundled model run
    # as shipped (without the int8 derivation, which a model directory skips).
    raw = OnnxEmbedder.bundled(derive=None, verify_cache_dir=verify_cache_dir)
    np.testing.assert_allclose(vectors, raw.embed(MIXED_TEXTS[:4]), atol=1e-5)


def test_user_model_cls_pooling(bundled: OnnxEmbedder, user_model_dir: Path) -> None:
    embedder = OnnxEmbedder.from_directory(user_model_dir, name="cls-model", pooling="cls")
    texts = ["The cat sat on the mat.", "A kitten was resting on the rug."]
    vectors = embedder.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors, bundled.embed(texts), atol=1e-3)


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json"])
def test_user_model_directory_missing_file(tmp_path: Path, missing: str) -> None:
    model, tokenizer = bundled_model_files()
    for name, source in (("model.onnx", model), ("tokenizer.json", tokenizer)):
        if name != missing:
            (tmp_path / name).symlink_to(source)
    with pytest.raises(EmbedderError) as info:
        make_embedder(EmbeddingSettings(path=str(tmp_path), model="mine"))
    assert f"has no {missing}" in info.value.message
    assert str(tmp_path) in info.value.message


def test_user_model_path_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="not a directory"):
        OnnxEmbedder.from_directory(tmp_path / "nowhere", name="x")


def test_garbage_model_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"this is not an onnx file")
    shutil.copy(bundled_model_files()[1], tmp_path / "tokenizer.json")
    embedder = OnnxEmbedder.from_directory(tmp_path, name="junk")
    with pytest.raises(EmbedderError, match="cannot load embedding model"):
        embedder.embed(["hello"])


def test_garbage_tokenizer_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").symlink_to(bundled_model_files()[0])
    (tmp_path / "tokenizer.json").write_text("{not json")
    embedder = OnnxEmbedder.from_directory(tmp_path, name="junk")
    with pytest.raises(EmbedderError, match="cannot load tokenizer"):
        embedder.embed(["hello"])


# ---- settings validation --------------------------------------------------


def test_bad_settings_are_refused(user_model_dir: Path) -> None:
    with pytest.raises(EmbedderError, match="pooling"):
        OnnxEmbedder.from_directory(user_model_dir, name="x", pooling="max")
    with pytest.raises(EmbedderError, match="512"):
        make_embedder(EmbeddingSettings(max_tokens=1024))
    with pytest.raises(EmbedderError, match=r"embedding\.path"):
        make_embedder(EmbeddingSettings(model="bge-small-en"))
    with pytest.raises(EmbedderError, match="mean pooling"):
        make_embedder(EmbeddingSettings(pooling="cls"))
    with pytest.raises(EmbedderError, match="batch_size"):
        make_embedder(EmbeddingSettings(batch_size=0))


# ---- batch planner --------------------------------------------------------


@given(
    lengths=st.lists(st.integers(min_value=2, max_value=256), max_size=200),
    batch_size=st.integers(min_value=1, max_value=64),
    max_batch_tokens=st.integers(min_value=1, max_value=20_000),
)
def test_batch_plan_respects_both_caps(
    lengths: list[int], batch_size: int, max_batch_tokens: int
) -> None:
    embedder = OnnxEmbedder(
        "unused.onnx",
        "unused.json",
        name="plan",
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
    )
    lengths = sorted(lengths)
    batches = list(embedder.plan_batches(lengths))
    assert [i for batch in batches for i in batch] == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= batch_size
        longest = max(lengths[i] for i in batch)
        # A single text always runs (the cap is never below max_tokens).
        if len(batch) > 1:
            assert len(batch) * longest <= embedder.max_batch_tokens
            assert len(batch) * longest * longest <= embedder.max_batch_attention
