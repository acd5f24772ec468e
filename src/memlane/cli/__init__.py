"""The ``memlane`` command for people: one module per command group."""
