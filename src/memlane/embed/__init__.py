"""Embedders: the bundled ONNX model, a user ONNX model directory, or any
OpenAI-compatible HTTP endpoint, behind one small protocol.

Importing this package is cheap: numpy, onnxruntime, tokenizers and httpx are
imported only when something is embedded.
"""

from __future__ import annotations

from memlane.embed.base import Embedder
from memlane.embed.factory import PROVIDERS, bundled_model_files, make_embedder

__all__ = ["PROVIDERS", "Embedder", "bundled_model_files", "make_embedder"]
