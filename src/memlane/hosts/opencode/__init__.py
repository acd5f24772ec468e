"""OpenCode host: a plugin in OpenCode's process, a thin client of the warm engine."""
