"""``memlane`` with the sessions commands registered (until cli/main.py does)."""

from __future__ import annotations

from memlane.cli import main as cli_main
from memlane.cli.sessions_cmds import register

if not any(group.name == "sessions" for group in cli_main.app.registered_groups):
    register(cli_main.app)
cli_main.run()
