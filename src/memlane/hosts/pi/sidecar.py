"""``memlane sidecar``: the sidecar protocol for pi, relayed to the warm engine.

pi's package starts ``memlane sidecar`` for each session and speaks the
sidecar protocol (hosts/server/rpc.py) on its stdin and stdout. The command
is a relay (hosts/pi/bridge.py): it reaches the user's warm engine, starting
it when none runs, and copies bytes both ways, so a pi session costs a
process start and no import of the engine, and the catch-up index, the
model's warm-up and the backfill run in the engine, which finishes them
after the session ends.

When no engine can be reached (``MEMLANE_ENGINE=off``, a socket directory
another user may write to, an engine that dies at start), the protocol is
served here instead, by the same code the engine runs (``Sidecar``): slower
to start, and the index work ends with the session, but memory still works.
Logs go to stderr only; the process exits on stdin EOF.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

from memlane.core.clock import SYSTEM_CLOCK, Clock
from memlane.hosts.jsonrpc import Connection

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.hosts.server.commands import FullCommandLine

log = logging.getLogger("memlane.sidecar")


class Sidecar:
    """The sidecar protocol served in this process, for one host on one connection."""

    def __init__(
        self,
        connection: Connection,
        directory: Path,
        *,
        clock: Clock = SYSTEM_CLOCK,
        full: FullCommandLine | None = None,
    ) -> None:
        """``full``: the whole command line, so pi's ``/memory`` subcommands run
        memlane's own commands here, as the engine runs them (the ``cli``
        request); without it that request is refused."""
        from memlane.hosts.server.commands import Commands
        from memlane.hosts.server.projects import Projects
        from memlane.hosts.server.rpc import RpcSession

        self.projects = Projects(clock=clock)
        self.commands = Commands(self.projects, full) if full is not None else None
        self.rpc = RpcSession(
            connection,
            self.projects,
            directory,
            client="pi",
            commands=self.commands,
            wait_at_end=True,
        )

    @property
    def session(self) -> Session | None:
        return self.rpc.session

    def run(self) -> int:
        try:
            self.rpc.run()
        finally:
            self.projects.close()
        return 0


def run_sidecar(
    directory: Path | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    full: FullCommandLine | None = None,
) -> int:
    """Serve in this process until stdin closes. stdout carries protocol lines only."""
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MEMLANE_LOG_LEVEL", "WARNING").upper(),
        format="memlane sidecar: %(levelname)s %(name)s: %(message)s",
    )
    reader = stdin or sys.stdin.buffer
    writer = stdout or sys.stdout.buffer
    # Anything else printing to stdout would corrupt the protocol: send it to stderr.
    sys.stdout = sys.stderr
    sidecar = Sidecar(Connection(reader, writer), directory or Path.cwd(), clock=clock, full=full)
    return sidecar.run()
