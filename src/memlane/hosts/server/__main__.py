"""``python -m memlane.hosts.server``: run the warm engine (started by a thin client)."""

from memlane.core.process import exit_process
from memlane.hosts.server.process import main

exit_process(main())
