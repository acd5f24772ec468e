"""The MCP host: ``memlane mcp``, the agent tools over MCP on stdio.

``thin`` is the server (standard library and memlane's light modules only:
it answers the handshake and the tool list in milliseconds), ``tools`` what
it lists and how results look, ``calls`` how a call reaches the warm engine
(or this process, when none can be reached), ``config`` the client
configuration ``memlane install mcp --print`` prints. No ``mcp`` SDK here.
"""
