"""Derive a fully int8 version of the bundled model, once, cached.

The bundled ``model.onnx`` stores its weights as int8 but dequantizes them
(``Cast`` → ``Mul`` by a scale) into float32 before every ``MatMul``, so the
encoder runs float32 GEMMs: ~100 texts/s for 300-character texts on 2 cores.
Folding those dequantize pairs into float weights and re-quantizing the
``MatMul`` weights per output channel with onnxruntime's dynamic quantizer
makes the GEMMs int8 (``MatMulInteger``): ~215 texts/s, vectors at cosine
≥ 0.988 to the float ones, LoCoMo dense recall_any@10 0.514 vs 0.520 (see
docs/adr/0004-int8-matmuls-for-the-bundled-model.md).

The derived file lives in ``$MEMLANE_HOME/cache/models/`` under a name that
carries the source hash and the recipe version; its own sha256 is recorded
beside it and checked at load like the bundled file's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import EmbedderError
from memlane.core.locks import lock_file
from memlane.embed.onnx_runtime import import_onnxruntime

#: Bumped whenever the derivation changes: it names the vector space, so a
#: new recipe re-embeds every chunk instead of mixing vectors.
QUANT_RECIPE = "int8-dyn-pc-v1"

_INT8 = 3  # onnx.TensorProto.INT8


def derived_path(source: Path, source_sha256: str, cache_dir: Path) -> Path:
    return cache_dir / "models" / f"{source.stem}-{source_sha256[:12]}-{QUANT_RECIPE}.onnx"


def quantized_model(source: Path, source_sha256: str, cache_dir: Path) -> tuple[Path, str]:
    """(path, sha256) of the int8 model derived from ``source``, built if missing.

    Concurrent first uses are serialised by a lock file; the file appears
    atomically (temp file + rename), so a crash never leaves half a model.
    """
    target = derived_path(source, source_sha256, cache_dir)
    digest_file = target.with_name(target.name + ".sha256")
    with contextlib.suppress(OSError):
        if target.is_file():
            return target, digest_file.read_text(encoding="ascii").strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.with_name(target.name + ".lock")
    with lock_file(lock_path, exclusive=True):
        if target.is_file() and digest_file.is_file():
            return target, digest_file.read_text(encoding="ascii").strip()
        _build(source, target)
        digest = _sha256(target)
        write_atomic(digest_file, digest + "\n")
        return target, digest


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _build(source: Path, target: Path) -> None:
    """Run the derivation in a child process.

    Loading and rewriting the graph peaks near 500 MB (the folded float
    weights plus the quantizer's copies); in a child that memory is returned
    to the system as soon as it exits, instead of staying in the indexing
    process for its lifetime.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "memlane.embed.quantize", str(source), str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        detail = lines[-1] if lines else f"exit status {proc.returncode}"
        raise EmbedderError(
            f"cannot prepare the int8 embedding model from {source}: {detail}; "
            "set embedding.provider = none for lexical search, or report this"
        )


def build_in_process(source: Path, target: Path) -> None:
    try:
        import_onnxruntime()  # first: this child would otherwise write into ~/.cache
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderError(
            f"cannot prepare the int8 embedding model: {exc}; reinstall memlane "
            "(it needs the onnx package), or set embedding.provider = none"
        ) from exc
    try:
        model = onnx.load(str(source))
        _fold_weight_dequantization(model)
        # The quantizer writes to a path of its own; the model then reaches
        # ``target`` through the one atomic write (core/atomic.py), so a crash
        # never leaves half a model where a reader would load it.
        with tempfile.TemporaryDirectory(prefix=".quantize-", dir=target.parent) as scratch:
            quantized = Path(scratch) / target.name
            # The quantizer logs advice to the root logger; it is not for our users.
            logging.disable(logging.WARNING)
            try:
                quantize_dynamic(model, quantized, per_channel=True, weight_type=QuantType.QInt8)
            finally:
                logging.disable(logging.NOTSET)
            write_atomic(target, quantized.read_bytes())
    except EmbedderError:
        raise
    except Exception as exc:  # onnx/ORT raise many unrelated types for bad graphs
        raise EmbedderError(
            f"cannot prepare the int8 embedding model from {source}: {exc}; "
            "set embedding.provider = none for lexical search, or report this"
        ) from exc


def _fold_weight_dequantization(model: Any) -> None:
    """Replace ``Mul(Cast(int8 weight), scale)`` by one float32 initializer."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    dead: list[Any] = []
    for cast in graph.node:
        if cast.op_type != "Cast" or cast.input[0] not in inits:
            continue
        if inits[cast.input[0]].data_type != _INT8:
            continue
        users = consumers.get(cast.output[0], [])
        if len(users) != 1 or users[0].op_type != "Mul":
            continue
        mul = users[0]
        scale_name = next(name for name in mul.input if name != cast.output[0])
        if scale_name not in inits:
            continue
        weight = numpy_helper.to_array(inits[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[scale_name]).astype(np.float32)
        folded = mul.output[0] + "_folded"
        graph.initializer.append(numpy_helper.from_array(weight * scale, folded))
        for user in consumers.get(mul.output[0], []):
            for i, name in enumerate(user.input):
                if name == mul.output[0]:
                    user.input[i] = folded
        dead += [cast, mul]
    for node in dead:
        graph.node.remove(node)
    used = {name for node in graph.node for name in node.input}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)


def main(argv: list[str]) -> int:
    """``python -m memlane.embed.quantize SOURCE TARGET`` (used by ``_build``)."""
    if len(argv) != 2:
        sys.stderr.write("usage: python -m memlane.embed.quantize SOURCE.onnx TARGET.onnx\n")
        return 2
    try:
        build_in_process(Path(argv[0]), Path(argv[1]))
    except EmbedderError as exc:
        sys.stderr.write(f"{exc.message}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
