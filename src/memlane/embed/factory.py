"""Build the configured embedder from ``EmbeddingSettings``.

Construction is cheap for every provider (no model load, no request): the
ONNX model loads on first use and the HTTP client connects on first use, so
``make_embedder`` can run on every start without cost.
"""

from __future__ import annotations

from pathlib import Path

from memlane.core.errors import EmbedderError
from memlane.core.settings import EmbeddingSettings
from memlane.core.types import EMBED_INPUT_VERSION
from memlane.embed.base import Embedder

PROVIDERS = ("onnx", "openai", "none")
OPENAI_BASE_URL = "https://api.openai.com/v1"


def make_embedder(settings: EmbeddingSettings) -> Embedder | None:
    """The embedder for ``settings``, or None when provider is ``"none"``
    (search is then lexical only). Raises ``EmbedderError`` for a bad
    configuration, naming the setting to fix."""
    provider = settings.provider.strip().lower()
    if provider == "none":
        return None
    if provider == "onnx":
        from memlane.embed.onnx import OnnxEmbedder

        return OnnxEmbedder.from_settings(settings)
    if provider == "openai":
        from memlane.embed.http import OpenAIEmbedder

        base_url = settings.base_url
        if not base_url:
            if not settings.api_key:
                raise EmbedderError(
                    "embedding.provider is openai but embedding.base_url is not set; set it to "
                    "your server's OpenAI-compatible root (e.g. http://127.0.0.1:11434/v1 for "
                    f"Ollama), or set embedding.api_key to use {OPENAI_BASE_URL}"
                )
            # Only with a key: without one, api.openai.com would just answer 401,
            # and a local-server user who forgot base_url would leak texts to a
            # third party the moment they add any key-like setting by mistake.
            base_url = OPENAI_BASE_URL
        return OpenAIEmbedder(
            base_url,
            settings.model,
            api_key=settings.api_key,
            batch_size=settings.batch_size,
            timeout_s=settings.timeout_s,
        )
    raise EmbedderError(
        f"unknown embedding.provider {settings.provider!r}; use one of: {', '.join(PROVIDERS)}"
    )


def vector_space(settings: EmbeddingSettings) -> str:
    """Names the space the vectors live in, without loading anything.

    The index is bound to it: when it changes (another model, endpoint,
    model directory or derivation recipe) every chunk is re-embedded, so
    vectors of two spaces never mix. The chunk-hash model name stays
    ``settings.model`` (mesh parity)."""
    provider = settings.provider.strip().lower()
    # The embedding-input rule is part of the space: the same model fed
    # other text gives other vectors.
    text = f"|input:{EMBED_INPUT_VERSION}"
    if provider == "onnx" and settings.path:
        return f"{settings.model}|onnx-dir:{Path(settings.path).expanduser().resolve()}{text}"
    if provider == "onnx":
        from memlane.embed.quantize import QUANT_RECIPE

        return f"{settings.model}|bundled:{QUANT_RECIPE}{text}"
    if provider == "openai":
        return f"{settings.model}|openai:{settings.base_url or OPENAI_BASE_URL}{text}"
    return settings.model


def bundled_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the bundled all-MiniLM-L6-v2 int8 model."""
    from memlane.embed.onnx import bundled_files

    return bundled_files()
