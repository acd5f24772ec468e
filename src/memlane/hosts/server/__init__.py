"""The warm engine: one process per user serving every host (hosts/server/process.py)."""
