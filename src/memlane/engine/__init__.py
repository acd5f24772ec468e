"""The engine: one Memory per project scope, shared by every host."""

from memlane.engine.memory import Memory

__all__ = ["Memory"]
