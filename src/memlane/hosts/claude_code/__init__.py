"""Claude Code host: the hook client, the warm per-user engine behind it, and the hook translation."""
