"""Local embeddings with onnxruntime: the bundled all-MiniLM-L6-v2 int8 model
or a user model directory (``model.onnx`` + ``tokenizer.json``).

Recipe (sentence-transformers' own): WordPiece via ``tokenizers``, truncate to
``max_tokens``, pad each batch to its longest member, run the encoder, pool
``last_hidden_state`` over the attention mask (mean) or take [CLS], then L2
normalise.

Cost model on a 2-core box: the model load is ~0.2 s and inference dominates
everything else (tokenising is ~1 % of the time; 75 % of inference is fp32
MatMul: the int8 weights of this export are dequantised once at load). So the
model is loaded lazily, once per process, and shared by every
``OnnxEmbedder`` with the same files; texts are sorted by length so padding
is nearly free; batches are small (a padded-token cap) and run concurrently,
one core each, which measured faster than ORT's intra-op threads and keeps
peak memory low (attention here is unfused: texts x 12 heads x length^2
floats, several times per layer).

onnxruntime, tokenizers and numpy are imported inside functions: importing
this package must stay cheap for CLI commands that never embed.

Modules, one job each: files.py (bundled files, model directories, the
integrity check), tokenizer.py, session.py (loading and the shared session
cache), inference.py (pad, run, pool), embedder.py (``OnnxEmbedder``,
batching), provider.py (the registry's entry).
"""

from __future__ import annotations

from memlane.embed.onnx.embedder import DEFAULT_MAX_BATCH_TOKENS, POOLING_MODES, OnnxEmbedder
from memlane.embed.onnx.files import (
    BUNDLED_DIMENSION,
    BUNDLED_MAX_POSITIONS,
    BUNDLED_TOKENIZER,
    MODEL_FILE,
    TOKENIZER_FILE,
    VERIFY_CACHE_FILE,
    bundled_files,
    file_sha256,
    verify_sha256,
)
from memlane.embed.onnx.session import clear_model_cache, default_threads, loaded_model_count

__all__ = [
    "BUNDLED_DIMENSION",
    "BUNDLED_MAX_POSITIONS",
    "BUNDLED_TOKENIZER",
    "DEFAULT_MAX_BATCH_TOKENS",
    "MODEL_FILE",
    "POOLING_MODES",
    "TOKENIZER_FILE",
    "VERIFY_CACHE_FILE",
    "OnnxEmbedder",
    "bundled_files",
    "clear_model_cache",
    "default_threads",
    "file_sha256",
    "loaded_model_count",
    "verify_sha256",
]
