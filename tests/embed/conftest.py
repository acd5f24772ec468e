"""Fixtures for the embedder tests.

The bundled ONNX model is loaded once per test session (``bundled``): every
other ``OnnxEmbedder`` for the same files shares that session through the
module-level model cache, so the whole folder stays fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.embed.onnx import OnnxEmbedder


@pytest.fixture(scope="session")
def verify_cache_dir(shared_cache: Path) -> Path:
    # Explicit, so the session fixture never writes to a real ~/.memlane; the
    # suite's one cache (tests/conftest.py), so the int8 model is derived once.
    return shared_cache


@pytest.fixture(scope="session")
def bundled(verify_cache_dir: Path) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder.bundled(verify_cache_dir=verify_cache_dir)
    embedder.warm()
    yield embedder


@pytest.fixture(scope="session")
def user_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user model directory: the bundled files, symlinked."""
    from memlane.embed.factory import bundled_model_files

    model, tokenizer = bundled_model_files()
    root = tmp_path_factory.mktemp("user-model")
    (root / "model.onnx").symlink_to(model)
    (root / "tokenizer.json").symlink_to(tokenizer)
    return root
