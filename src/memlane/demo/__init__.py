"""Demo data shipped with memlane (a fictional project's memory store)."""
