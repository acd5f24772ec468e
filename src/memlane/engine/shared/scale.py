"""``ModelScale``: the cosine scale a search uses for one vector space, and
where it came from (measured by engine/calibration, held by ``Memory``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from memlane.core.cosine_scale import CosineScale

#: "bundled": the reference model, nothing to derive; "derived": measured
#: for this model; "none": not measured yet (scores use the bundled model's
#: scale, which may be far off for this model).
ScaleSource = Literal["bundled", "derived", "none"]


@dataclass(frozen=True)
class ModelScale:
    """The scale a search uses for one vector space, and where it came from."""

    space: str
    source: ScaleSource
    scale: CosineScale | None
    measured_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "space": self.space,
            "source": self.source,
            "scale": self.scale.to_json() if self.scale else None,
            "measured_at": self.measured_at,
        }
