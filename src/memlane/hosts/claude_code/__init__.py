"""The Claude Code host: installer, hook client, warm per-user engine (translation only)."""
