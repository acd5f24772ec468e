"""The Codex CLI host: hooks through the warm engine, the MCP server, the recall skill."""
