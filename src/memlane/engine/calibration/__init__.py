"""A cosine scale for the embedding model in use (``memlane calibrate``).

Scores are calibrated on the bundled model (index/legs/relevance.py). For
any other model memlane measures where that model puts related and
unrelated text (core/cosine_scale.py) on fixed probe pairs (``probes``):
one embedding call of 80 short texts. The result is kept per vector space
in ``$MEMLANE_HOME/calibration/<space digest>.json``, derived once when the
model first indexes (``ensure_scale``) or on demand with ``memlane
calibrate``; ``memlane status`` says when the model in use has none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlane.core.atomic import write_atomic
from memlane.core.cosine_scale import REFERENCE_SCALE, CosineScale
from memlane.core.paths import memlane_home
from memlane.engine.calibration.probes import PROBE_PAIRS
from memlane.engine.shared.scale import ModelScale

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.core.settings import EmbeddingSettings
    from memlane.embed.base import Embedder

SCALE_FORMAT = 1


def calibration_dir() -> Path:
    return memlane_home() / "calibration"


def scale_path(space: str) -> Path:
    digest = hashlib.sha256(space.encode("utf-8")).hexdigest()[:16]
    return calibration_dir() / f"{digest}.json"


def is_bundled(settings: EmbeddingSettings) -> bool:
    """The configured model is the bundled one (the reference scale)."""
    from memlane.core.settings import EmbeddingSettings as Defaults
    from memlane.embed.factory import vector_space

    return vector_space(settings) == vector_space(Defaults())


def measure(embedder: Embedder) -> CosineScale:
    """Embed the probe pairs with ``embedder`` and read its scale off them."""
    notes = np.asarray(embedder.embed([note for note, _ in PROBE_PAIRS]), dtype=np.float64)
    questions = np.stack(
        [
            np.asarray(embedder.embed_query(question), dtype=np.float64).reshape(-1)
            for _, question in PROBE_PAIRS
        ]
    )
    notes /= np.maximum(np.linalg.norm(notes, axis=1, keepdims=True), 1e-12)
    questions /= np.maximum(np.linalg.norm(questions, axis=1, keepdims=True), 1e-12)
    cosines = questions @ notes.T
    related = np.diag(cosines)
    unrelated = cosines[~np.eye(len(PROBE_PAIRS), dtype=bool)]
    return CosineScale(
        unrelated_mean=float(unrelated.mean()),
        unrelated_std=float(unrelated.std()),
        related_mean=float(related.mean()),
    )


def load_scale(settings: EmbeddingSettings) -> ModelScale:
    """The scale for the configured model: the reference for the bundled
    one, else what was derived for it (``source`` "none" when nothing was)."""
    from memlane.embed.factory import vector_space

    space = vector_space(settings)
    if is_bundled(settings):
        return ModelScale(space, "bundled", REFERENCE_SCALE)
    try:
        data = json.loads(scale_path(space).read_text(encoding="utf-8"))
        if data.get("format") != SCALE_FORMAT or data.get("space") != space:
            return ModelScale(space, "none", None)
        scale = CosineScale(
            float(data["scale"]["unrelated_mean"]),
            float(data["scale"]["unrelated_std"]),
            float(data["scale"]["related_mean"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return ModelScale(space, "none", None)
    return ModelScale(space, "derived", scale, data.get("measured_at"))


def derive_scale(settings: EmbeddingSettings, embedder: Embedder, clock: Clock) -> ModelScale:
    """Measure the configured model's scale and keep it (``memlane calibrate``)."""
    from memlane.embed.factory import vector_space

    space = vector_space(settings)
    scale = measure(embedder)
    if is_bundled(settings):
        return ModelScale(space, "bundled", scale)
    when = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {
        "format": SCALE_FORMAT,
        "space": space,
        "scale": scale.to_json(),
        "measured_at": when,
    }
    path = scale_path(space)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n", durable=False)
    return ModelScale(space, "derived", scale, when)
