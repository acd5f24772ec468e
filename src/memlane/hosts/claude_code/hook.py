"""Claude Code's hook command, ``<python> -I -S <this file>``: hook_client.py's ``main``.

Python compiles a script it runs anew on every run, but a module it imports
only once (into its ``.pyc``): every prompt runs this file, so it only puts
the package on the path (``-I`` leaves it off) and hands over.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))

from memlane.hosts.claude_code.hook_client import LIMITS_S, field, main

__all__ = ["LIMITS_S", "field", "main"]

if __name__ == "__main__":
    sys.exit(main())
