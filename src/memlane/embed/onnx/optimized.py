"""The model with onnxruntime's graph optimizations already applied, kept in the cache.

Creating a session rewrites the graph every time (fusing layer norms,
GELUs, attention, folding constants): half of the session's start, which a
``memlane search`` without an engine pays on every call. onnxruntime can
write the graph it built (``optimized_model_filepath``); a session of that
file has nothing left to fuse. Measured on 2 busy cores: 145-165 ms of CPU
for the int8 model's session, 85-95 ms for the optimized file's, with the
same vectors bit for bit (60 texts and a batch; tests/embed/test_embed_optimized.py).

The file is made once per model and onnxruntime version (its fused operators
are onnxruntime's own), at the ``extended`` level, whose rewrites are the
same on every CPU; sessions of it still run with every optimization on, as
before. Its sha256 is recorded beside it and checked at load like the
model's (cached by size and mtime). If it cannot be made or loaded, the
model is loaded as it is: only the start is slower.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.locks import lock_file
from memlane.embed.onnx.files import file_sha256


def optimized_path(source: Path, source_sha256: str, cache_dir: Path, version: str) -> Path:
    return cache_dir / "models" / f"{source.stem}-{source_sha256[:12]}-ort{version}.onnx"


def optimized_model(
    ort: Any, source: Path, source_sha256: str, cache_dir: Path
) -> tuple[Path, str] | None:
    """(path, sha256) of *source* optimized by this onnxruntime, made if missing;
    None when it cannot be made (the caller loads *source*)."""
    target = optimized_path(source, source_sha256, cache_dir, str(ort.__version__))
    digest_file = target.with_name(target.name + ".sha256")
    with contextlib.suppress(OSError):
        if target.is_file():
            return target, digest_file.read_text(encoding="ascii").strip()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with lock_file(target.with_name(target.name + ".lock"), exclusive=True):
            if target.is_file() and digest_file.is_file():
                return target, digest_file.read_text(encoding="ascii").strip()
            temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            try:
                _write_optimized(ort, source, temp)
                digest = file_sha256(temp)
                os.replace(temp, target)
            finally:
                with contextlib.suppress(OSError):
                    temp.unlink()
            write_atomic(digest_file, digest + "\n")
            return target, digest
    except Exception:  # onnxruntime raises its own types; a slower start is the only cost
        return None


def _write_optimized(ort: Any, source: Path, target: Path) -> None:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    if not target.is_file() or target.stat().st_size == 0:
        raise RuntimeError("onnxruntime wrote no optimized model")
