"""Codex's hook command, ``<python> -I -S <this file>``: the Claude Code hook client's
``main`` with Codex's header (the engine answers with Codex's events, hosts/codex/events.py).

Python compiles a script it runs anew on every run, but a module it imports
only once (into its ``.pyc``): every prompt runs this file, so it only puts
the package on the path (``-I`` leaves it off) and hands over.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))

from memlane.core.link import CODEX_HOOK_HEADER
from memlane.hosts.claude_code.hook_client import main

CLIENT = "codex hook"

if __name__ == "__main__":
    sys.exit(main(CODEX_HOOK_HEADER, CLIENT))
