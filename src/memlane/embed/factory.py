"""Build the configured embedder from ``EmbeddingSettings``.

Providers come from a registry (name → module, factory, install hint), one
provider per module, imported only when chosen. ``none`` is no provider:
search is then lexical only.

Construction is cheap for every provider (no model load, no request): the
ONNX model loads on first use and the HTTP client connects on first use, so
``make_embedder`` can run on every start without cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

from memlane.core.errors import EmbedderError
from memlane.core.providers import Provider, ProviderRegistry
from memlane.core.settings import EmbeddingSettings
from memlane.core.types import EMBED_INPUT_VERSION
from memlane.embed.base import Embedder

_REINSTALL = "reinstall memlane, or set embedding.provider = none for lexical search only"

REGISTRY = ProviderRegistry(
    "embedding.provider",
    (
        # The bundled model, or a model directory (embedding.path).
        Provider(
            "onnx",
            "memlane.embed.onnx.provider",
            "make_embedder",
            f"the onnx provider needs onnxruntime, tokenizers and numpy; {_REINSTALL}",
        ),
        # Any OpenAI-compatible /v1/embeddings endpoint.
        Provider(
            "openai",
            "memlane.embed.http",
            "make_embedder",
            f"the openai provider needs httpx and numpy; {_REINSTALL}",
        ),
    ),
    EmbedderError,
)
#: Every accepted ``embedding.provider``, in the order the user is shown them.
PROVIDERS = (*REGISTRY.names, "none")

EmbedderFactory = Callable[[EmbeddingSettings], Embedder]
SpaceNamer = Callable[[EmbeddingSettings, str], str]


def make_embedder(settings: EmbeddingSettings) -> Embedder | None:
    """The embedder for ``settings``, or None when provider is ``"none"``
    (search is then lexical only). Raises ``EmbedderError`` for a bad
    configuration, naming the setting to fix."""
    provider = settings.provider.strip().lower()
    if provider == "none":
        return None
    if provider not in REGISTRY:
        raise EmbedderError(
            f"unknown embedding.provider {settings.provider!r}; use one of: {', '.join(PROVIDERS)}"
        )
    factory = cast(EmbedderFactory, REGISTRY.load(provider))
    return factory(settings)


def vector_space(settings: EmbeddingSettings) -> str:
    """Names the space the vectors live in, without loading anything.

    The index is bound to it: when it changes (another model, endpoint,
    model directory or derivation recipe) every chunk is re-embedded, so
    vectors of two spaces never mix. The chunk-hash model name stays
    ``settings.model`` (mesh parity)."""
    provider = settings.provider.strip().lower()
    if provider not in REGISTRY:
        return settings.model
    # The embedding-input rule is part of the space: the same model fed
    # other text gives other vectors.
    namer = cast(SpaceNamer, REGISTRY.load(provider, "vector_space"))
    return namer(settings, f"|input:{EMBED_INPUT_VERSION}")


def bundled_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the bundled all-MiniLM-L6-v2 int8 model."""
    from memlane.embed.onnx import bundled_files

    return bundled_files()
