"""The engine: one Memory per project scope, shared by every host."""

from memlane.engine.project import Memory

__all__ = ["Memory"]
