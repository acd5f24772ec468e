"""Shared value types, scope and configuration. No I/O policy lives here."""
