"""Provider ``onnx`` of the embedder registry (embed/factory.py): the bundled
model, or a model directory named by ``embedding.path``."""

from __future__ import annotations

from pathlib import Path

from memlane.core.settings import EmbeddingSettings
from memlane.embed.onnx.embedder import OnnxEmbedder


def make_embedder(settings: EmbeddingSettings) -> OnnxEmbedder:
    return OnnxEmbedder.from_settings(settings)


def vector_space(settings: EmbeddingSettings, input_rule: str) -> str:
    """The model directory (resolved) or the bundled model's int8 recipe."""
    if settings.path:
        return f"{settings.model}|onnx-dir:{Path(settings.path).expanduser().resolve()}{input_rule}"
    from memlane.embed.quantize import QUANT_RECIPE

    return f"{settings.model}|bundled:{QUANT_RECIPE}{input_rule}"
