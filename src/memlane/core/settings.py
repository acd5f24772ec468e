"""Typed settings sections, filled by the config resolver (core/config.py).

Kept apart from the resolver so embed/ and index/ can depend on the shapes
without pulling in file and environment handling.
"""

from __future__ import annotations

from dataclasses import dataclass

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_MAX_TOKENS = 256
DEFAULT_EMBED_BATCH_SIZE = 32


@dataclass(frozen=True)
class EmbeddingSettings:
    """Which embedder to use.

    provider:
      - ``"onnx"``: the bundled all-MiniLM-L6-v2 int8 model (default), or a
        user model directory when ``path`` is set (model.onnx + tokenizer.json).
      - ``"openai"``: any OpenAI-compatible ``/v1/embeddings`` endpoint.
      - ``"none"``: no embedder; search is lexical only.
    model: the model name; it is part of every chunk hash.
    """

    provider: str = "onnx"
    model: str = BUNDLED_MODEL_NAME
    base_url: str | None = None
    api_key: str | None = None
    path: str | None = None
    pooling: str = "mean"  # mean | cls
    max_tokens: int = DEFAULT_MAX_TOKENS
    batch_size: int = DEFAULT_EMBED_BATCH_SIZE
    timeout_s: float = 30.0


@dataclass(frozen=True)
class IndexSettings:
    backend: str = "sqlite"
    uri: str | None = None
    # Defaults measured on the LoCoMo development split (ADR 0005); "rrf"
    # (k=60) stays selectable for parity with memsearch.
    fusion: str = "convex"
    rrf_k: int = 60
    alpha: float = 0.4  # dense leg weight for fusion wrrf/convex; lexical gets 1 - alpha


# Auto-context (DESIGN §6) injects a hit only at or above this score: "clearly
# relevant". With convex fusion at alpha 0.4 a hit found by one leg alone
# scores at most 0.6 (lexical) or 0.4 (dense), so 0.65 asks both legs to
# agree. On LoCoMo it keeps the gold turn among the top 3 for 0.58 of
# questions (0.63 without a floor) while the questions of another
# conversation, about people the store never mentions, pass it 0.52 of the
# time (0.96 at the old floor of 0.5). Calibration: ADR 0005,
# `python benchmarks/quality/locomo.py --calibrate`.
AUTO_CONTEXT_SCORE_FLOOR = 0.65
