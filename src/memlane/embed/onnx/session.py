"""The ONNX session: loading the model with the measured ORT options,
checking the graph's inputs and output, and the per-process cache that lets
every ``OnnxEmbedder`` with the same files share one ~100 MB session.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.core.errors import EmbedderError
from memlane.embed.onnx.tokenizer import load_tokenizer
from memlane.embed.onnx_runtime import import_onnxruntime

_INPUT_DTYPES = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_HIDDEN_OUTPUTS = ("last_hidden_state", "token_embeddings")


@dataclass(frozen=True)
class LoadedModel:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    inputs: tuple[tuple[str, str], ...]  # (name, numpy dtype) the session declares
    output: str
    dimension: int | None  # from the output shape, when static


#: (model, tokenizer, pooling, max_tokens, intra_op_threads, derivation)
ModelKey = tuple[str, str, str, int, int, str | None]
_MODELS: dict[ModelKey, LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def shared_model(key: ModelKey, load: Callable[[], LoadedModel]) -> LoadedModel:
    """The process's session for ``key``, loaded by ``load`` on first use.

    The lock is held while loading, so two threads asking at once load once.
    """
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            loaded = load()
            _MODELS[key] = loaded
        return loaded


def clear_model_cache() -> None:
    """Drop every loaded session (tests, or to release memory)."""
    with _MODELS_LOCK:
        _MODELS.clear()


def loaded_model_count() -> int:
    """How many model sessions this process holds (each is ~100 MB of memory).

    Embedders built from the same files and settings share one session, so
    creating and warming another one leaves the count unchanged: what
    diagnostics and the tests of that sharing read.
    """
    with _MODELS_LOCK:
        return len(_MODELS)


def default_threads() -> int:
    """Cores this process may run on (affinity-aware, so a pinned container
    does not oversubscribe), falling back to ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def load_model(
    model_path: Path,
    tokenizer_path: Path,
    *,
    max_tokens: int,
    intra_op_threads: int,
) -> LoadedModel:
    try:
        ort = import_onnxruntime()
        import tokenizers  # noqa: F401  (checked here so one message names both)
    except ImportError as exc:
        raise EmbedderError(
            f"the onnx embedder needs onnxruntime and tokenizers ({exc}); "
            "reinstall memlane, or set embedding.provider = none"
        ) from exc

    tokenizer = load_tokenizer(tokenizer_path, max_tokens=max_tokens)

    options = ort.SessionOptions()
    # Parallelism comes from running whole batches concurrently on this one
    # session (see OnnxEmbedder), so by default ORT gets no thread pool of its
    # own: measured on 2 cores that is as fast when idle and about 1.7x faster
    # when another process competes for the CPU, because ORT's pool threads
    # spin and wait on each other at every op. inter_op 1: the graph is a
    # plain chain, parallel branches buy nothing.
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Memory patterns are planned per input shape; with a new shape on almost
    # every batch they only cost memory (measured: +100 MB peak).
    options.enable_mem_pattern = False
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: ORT warnings are noise to users
    try:
        session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # ORT raises its own exception types
        raise EmbedderError(f"cannot load embedding model {model_path}: {exc}") from exc

    inputs: list[tuple[str, str]] = []
    for node in session.get_inputs():
        if node.name not in _KNOWN_INPUTS:
            raise EmbedderError(
                f"embedding model {model_path} needs input {node.name!r}; "
                f"memlane can feed only {', '.join(_KNOWN_INPUTS)}"
            )
        dtype = _INPUT_DTYPES.get(node.type)
        if dtype is None:
            raise EmbedderError(
                f"embedding model {model_path} input {node.name!r} has type {node.type}; "
                "expected int64 or int32"
            )
        inputs.append((node.name, dtype))
    if "input_ids" not in {name for name, _ in inputs}:
        raise EmbedderError(f"embedding model {model_path} has no input_ids input")

    outputs = {node.name: node for node in session.get_outputs()}
    output = next((name for name in _HIDDEN_OUTPUTS if name in outputs), None)
    if output is None:
        raise EmbedderError(
            f"embedding model {model_path} has no last_hidden_state output "
            f"(it has: {', '.join(outputs) or 'none'}); export it with token embeddings"
        )
    shape = outputs[output].shape
    dimension = shape[-1] if shape and isinstance(shape[-1], int) else None
    return LoadedModel(session, tokenizer, tuple(inputs), output, dimension)
