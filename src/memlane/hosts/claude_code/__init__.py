"""Claude Code host: the installer, the hook client, the warm per-user engine behind it, and the hook translation."""
