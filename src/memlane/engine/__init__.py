"""The engine: one Memory per project scope, shared by every host.

``Memory`` is loaded on first use (``from memlane.engine import Memory``):
importing a light module of the engine, such as the tool specs that
``memlane mcp`` lists before anything else, must not import all of it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing unimported: see above
if TYPE_CHECKING:
    from typing import Any

    from memlane.engine.project import Memory

__all__ = ["Memory"]


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from memlane.engine.project import Memory

        return Memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
