"""A model's cosine scale, and how it maps onto the bundled model's.

Search scores are calibrated on the bundled model's cosines
(index/legs/relevance.py). Another model spreads cosines differently: some
put unrelated texts near 0, others near 0.8. A model's scale is measured on
fixed probe pairs (engine/calibration): the mean cosine of a question with
its own note (``related``) and with the other notes (``unrelated``, its mean
and spread). A cosine is moved onto the reference scale by standardizing it
against the model's unrelated pairs and placing it as far above the bundled
model's unrelated level, in its spread: how unusual a cosine is for the
model is what carries over, so the fitted curve and the floors keep their
meaning, and a model that barely separates related text (its related level
a fraction of a spread above the unrelated one) gets honest, low scores
instead of its noise stretched into certainty (docs/adr/0029).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CosineScale:
    """Where a model puts unrelated and related text on the cosine axis."""

    unrelated_mean: float
    unrelated_std: float
    related_mean: float

    @property
    def gap(self) -> float:
        return self.related_mean - self.unrelated_mean

    def to_reference(self, cosine: float) -> float:
        """``cosine`` of this model as the bundled model would likely score it."""
        ref = REFERENCE_SCALE
        if self == ref or self.unrelated_std <= 0:
            return cosine
        spreads = (cosine - self.unrelated_mean) / self.unrelated_std
        return ref.unrelated_mean + spreads * ref.unrelated_std

    def to_json(self) -> dict[str, float]:
        return {
            "unrelated_mean": round(self.unrelated_mean, 5),
            "unrelated_std": round(self.unrelated_std, 5),
            "related_mean": round(self.related_mean, 5),
        }


#: The bundled model (all-MiniLM-L6-v2, int8) on the probe pairs, measured by
#: ``memlane calibrate`` (tests/engine/test_calibration.py checks it).
REFERENCE_SCALE = CosineScale(unrelated_mean=0.0656, unrelated_std=0.0825, related_mean=0.4208)
