"""A backfill in its own process, for the kill -9 resume test.

argv: project root, embed log path (one line per embed call: its text
count), delay per embed call in seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _fixtures import HashEmbedder

from memlane.engine.project import Memory
from memlane.engine.sessions.layer import SessionsLayer


def main() -> None:
    root, log, delay = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    embedder = HashEmbedder(delay_s=delay, log=log)
    layer = SessionsLayer(Memory.open(root), embedder=embedder)
    report = layer.backfill()
    print(json.dumps({"report": report.to_json(), "embedded": embedder.embedded}))


if __name__ == "__main__":
    main()
