"""Ready-to-paste MCP client configuration for ``memlane install mcp --print``.

Clients start stdio servers without a shell and often without the user's
PATH, so the command is the absolute path of the memlane that is running
(a virtualenv or ``uv tool`` install is then found no matter how the client
was launched). No SDK import: printing config must not need the server.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

SERVER_KEY = "memlane"


def memlane_command(argv0: str | None = None, python: str | None = None) -> list[str]:
    """How to start this very memlane: its console script, else ``python -m``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    name = Path(argv0).name
    if name in ("memlane", "memlane.exe") and Path(argv0).is_file():
        # abspath, not realpath: a ``uv tool``/pipx shim keeps working across upgrades.
        return [os.path.abspath(argv0)]
    # cli/fast.py is what the console script runs: `mcp` starts without the full CLI.
    return [python or sys.executable, "-m", "memlane.cli.fast"]


#: Parts of a variable's name that mark a secret: never written into a client's config.
SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def server_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``env`` of memlane's server entry: ``MEMLANE_HOME`` (resolved, the
    default ``~/.memlane`` too) and every other variable that keys memlane's
    engine (``MEMLANE_*``, ``MEMSEARCH_*``, ``CODEX_HOME``...) set in *environ*
    but ``HOME``: clients start servers with an environment of their own
    (Codex passes only a short list), and a server without them would use
    another store than the hooks. Names that look secret are left out."""
    from memlane.core import link

    source = os.environ if environ is None else environ
    raw_home = source.get(link.HOME_ENV) or link.DEFAULT_HOME
    home = raw_home
    if raw_home == "~" or raw_home.startswith("~/"):
        home = os.path.join(source.get("HOME") or os.path.expanduser("~"), raw_home[2:])
    env = {link.HOME_ENV: os.path.realpath(home)}
    for name, value in sorted(link.keyed_environment(dict(source)).items()):
        if name == "HOME" or name in link.UNKEYED_NAMES:
            continue
        if any(mark in name.upper() for mark in SECRET_MARKS):
            continue
        env[name] = value
    return env


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes for what a path holds).
    return json.dumps(value)


def render_config(command: list[str], env: Mapping[str, str] | None = None) -> str:
    """The config for Claude Code, Cursor and Codex, as one text to copy from;
    *env* (default ``server_env()``) is each entry's ``env``."""
    exe, *prefix = command
    args = [*prefix, "mcp"]
    server = dict(server_env() if env is None else env)
    entry: dict[str, object] = {"command": exe, "args": args}
    if server:
        entry["env"] = server
    claude_entry = {"type": "stdio", **entry}
    shell = shlex.join([exe, *args])
    claude_env = "".join(f" -e {shlex.quote(f'{k}={v}')}" for k, v in server.items())
    toml_args = ", ".join(_toml_string(a) for a in args)
    toml_env = ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in server.items())
    json_claude = json.dumps({"mcpServers": {SERVER_KEY: claude_entry}}, indent=2)
    json_cursor = json.dumps({"mcpServers": {SERVER_KEY: entry}}, indent=2)
    return f"""\
# memlane over MCP: the memory tools (memory_search → memory_expand → memory_transcript,
# memory_write, memory_topic, memory_similar, memory_forget, memory_compact,
# memory_status) for any MCP client.
# The server serves the project it is started in; if a client starts it elsewhere,
# add "-C", "/path/to/project" after "mcp".

## Claude Code — this project, just for you (add --scope user for every project):
claude mcp add {SERVER_KEY}{claude_env} -- {shell}

## Claude Code — shared with the project, in .mcp.json at its root:
{json_claude}

## Cursor — ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project):
{json_cursor}

## Codex — ~/.codex/config.toml (`memlane install codex` adds it with the hooks):
[mcp_servers.{SERVER_KEY}]
command = {_toml_string(exe)}
args = [{toml_args}]
env = {{ {toml_env} }}
"""
