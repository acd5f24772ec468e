"""The error hierarchy every surface renders as one clear line.

A ``MemlaneError`` is an *expected* failure: the CLI prints its message and
hint and exits non-zero, never a traceback. Anything else is a bug.
"""

from __future__ import annotations


class MemlaneError(Exception):
    """An expected, user-facing failure: what went wrong and what to do."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class ScopeError(MemlaneError):
    """The project scope, store or collection could not be resolved."""


class StoreCommandError(ScopeError):
    """The configured store command failed; never silently fallen back from."""


class ConfigError(MemlaneError):
    """A configuration file or value is invalid."""


class ConfigSyntaxError(ConfigError):
    """A configuration file was read but is not valid TOML (its content, not
    the machine: the settings layers leave it out and report it)."""


class StoreError(MemlaneError):
    """A markdown store file is missing, unreadable or malformed."""


class DiskFullError(StoreError):
    """A file could not be written: its disk (or the user's quota) is full.

    Built by ``core/diskspace.disk_full_error``; the message names the file
    and what the failure left behind, the hint how to see the free space.
    """


class NotFoundError(MemlaneError):
    """A chunk hash, file or entry that was asked for does not exist."""


class ConflictError(MemlaneError):
    """What a caller confirmed changed before the action ran; nothing was done."""


class EmbedderError(MemlaneError):
    """The embedding provider could not load or answer."""


class IndexCorruptError(MemlaneError):
    """The derived index file is damaged and must be rebuilt from markdown."""


class LlmError(MemlaneError):
    """The LLM provider could not be reached, timed out or answered badly."""
