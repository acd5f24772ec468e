"""The agent-facing tools: one implementation for every host."""
