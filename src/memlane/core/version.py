"""memlane's version, in a module of the lowest layer so that any layer may read
it without importing the package's top level (which names the engine)."""

__version__ = "0.1.0"
