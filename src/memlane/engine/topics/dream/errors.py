"""The dream's errors: ``DreamError`` (nothing was changed) and ``DreamPlanError``
(an unusable plan, from the LLM or from a saved plan file)."""

from __future__ import annotations

from memlane.core.errors import MemlaneError


class DreamError(MemlaneError):
    """A dream could not run or could not be applied; nothing was changed."""


class DreamPlanError(DreamError):
    """The LLM's plan was unusable; nothing was changed."""


def _bad_file(message: str) -> DreamPlanError:
    return DreamPlanError(
        f"the dream plan file is unusable: {message}; nothing was changed",
        "plan again: `memlane dream --dry-run --save-plan FILE`, then "
        "`memlane dream --apply-plan FILE`",
    )
