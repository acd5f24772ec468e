"""The pi host: the JSON-RPC sidecar and `memlane install pi`."""
