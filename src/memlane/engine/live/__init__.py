"""Live: one agent session's lifecycle, its auto-context and its warm worker."""
