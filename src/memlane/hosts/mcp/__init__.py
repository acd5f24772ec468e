"""The MCP host: ``memlane mcp``, the agent tools over MCP on stdio.

Nothing here imports the ``mcp`` SDK at package import: it is only loaded
when the server actually starts, so every other command stays fast.
"""
