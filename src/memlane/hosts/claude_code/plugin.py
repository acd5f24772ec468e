"""What memlane adds to Claude Code: the hook command, the MCP server, the plugin directory.

The plugin directory is also a one-plugin marketplace, so Claude Code can load
it from settings (``extraKnownMarketplaces`` with a ``directory`` source plus
``enabledPlugins``, what ``memlane install claude-code`` writes) or by hand
(``/plugin marketplace add <dir>``, then ``/plugin install memlane@memlane``)::

    <dir>/.claude-plugin/plugin.json        the manifest
    <dir>/.claude-plugin/marketplace.json   the marketplace listing this one plugin
    <dir>/hooks/hooks.json                  the four hooks, one command
    <dir>/.mcp.json                         ``memlane mcp``, server ``memlane``
    <dir>/skills/recall/SKILL.md            the forked recall ladder, also /recall <question>
    <dir>/commands/memory.md                /memory

There is no ``commands/recall.md``: in Claude Code 2.1 a command and a skill
share one namespace, and a command named ``recall`` hides the skill (it is
no longer listed, nor run forked), so ``/recall <question>`` is the skill
itself. The skill and the command ship as package data (``plugin/`` beside this module;
``@MEMLANE@`` in them becomes the memlane executable); the other files are
generated, because they carry absolute paths: the Python running memlane,
the hook client's path (``hook.py`` beside this module, run with ``-I -S`` so
it starts fast and reads nothing from the environment's Python settings) and
the memlane executable.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.hosts.claude_code.hook import LIMITS_S

PLUGIN_NAME = "memlane"
MARKETPLACE_NAME = "memlane"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"
SERVER_NAME = "memlane"
#: Tool-name prefixes (and allow rules): a plugin's servers are namespaced by the plugin.
SETTINGS_TOOL_PREFIX = f"mcp__{SERVER_NAME}"
PLUGIN_TOOL_PREFIX = f"mcp__plugin_{PLUGIN_NAME}_{SERVER_NAME}"
#: The recall skill's allow rules (a skill with its own tools asks before it runs).
SETTINGS_SKILL_RULE = "Skill(recall)"
PLUGIN_SKILL_RULE = f"Skill({PLUGIN_NAME}:recall)"
MEMLANE_PLACEHOLDER = "@MEMLANE@"

STATIC_DIR = Path(__file__).with_name("plugin")
HOOK_SCRIPT = Path(__file__).with_name("hook.py")

#: Seconds Claude Code gives a hook above the client's own limit for it.
TIMEOUT_MARGIN_S = 2
#: No SessionEnd hook: Claude Code waits for one at every exit (a process
#: start, 0.1-0.15 s of every ``claude -p`` on a busy machine) and cancels a
#: plugin's after 1.5 s; the engine ends a session when its Claude Code
#: process exits or starts another session (hosts/claude_code/events.py,
#: docs/adr/0026-claude-code-sessions-end-without-a-hook.md).
_MATCHERS: dict[str, str | None] = {
    "SessionStart": "startup|resume|clear|compact",
    "UserPromptSubmit": None,
    "Stop": None,
    "PreCompact": None,
}
#: (event, matcher, timeout in seconds). Claude Code's timeouts are a safety
#: net above the hook client's own limits (hook.py's LIMITS_S, engine start
#: included), so Claude Code never has to kill a hook. Stop is synchronous: Claude Code
#: cancels an ``async`` hook when ``claude -p`` ends, tens of milliseconds
#: after moving it to the background, which would lose the capture; the Stop
#: client only puts the exchange in the capture log and returns (docs/adr/0018-claude-code-install.md).
HOOK_EVENTS: tuple[tuple[str, str | None, int], ...] = tuple(
    (event, matcher, math.ceil(LIMITS_S[event]) + TIMEOUT_MARGIN_S)
    for event, matcher in _MATCHERS.items()
)


def hook_command(python: str | None = None, script: Path | None = None) -> str:
    """``<abs python> -I -S <abs hook.py>``, quoted for the shell Claude Code runs it in."""
    import shlex

    exe = python or str(Path(sys.executable).absolute())
    return f"{shlex.quote(exe)} -I -S {shlex.quote(str((script or HOOK_SCRIPT).absolute()))}"


def hook_groups(command: str) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` object: one matcher group per event, all running *command*."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, timeout in HOOK_EVENTS:
        hook: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout}
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [hook]
        groups[event] = [group]
    return groups


def memlane_executable() -> str | None:
    """The memlane being run (reused from the pi installer: one rule for both hosts)."""
    from memlane.hosts.pi.install import memlane_executable as find

    return find()


def mcp_server(memlane: str | None = None, python: str | None = None) -> dict[str, Any]:
    """The stdio server entry: ``<memlane> mcp``, else ``<python> -m memlane.cli.fast mcp``
    (what the ``memlane`` script runs: the server starts without the full CLI)."""
    exe = memlane if memlane is not None else memlane_executable()
    if exe:
        return {"type": "stdio", "command": exe, "args": ["mcp"]}
    interpreter = python or str(Path(sys.executable).absolute())
    return {"type": "stdio", "command": interpreter, "args": ["-m", "memlane.cli.fast", "mcp"]}


def static_files(memlane: str) -> dict[str, str]:
    """The skill and the command (relative path → text), with the memlane executable filled in."""
    files = {}
    for path in sorted(STATIC_DIR.rglob("*.md")):
        text = path.read_text(encoding="utf-8").replace(MEMLANE_PLACEHOLDER, memlane)
        files[path.relative_to(STATIC_DIR).as_posix()] = text
    return files


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


README = """# memlane for Claude Code

Long-term memory for Claude Code, written by `memlane install claude-code`
(do not edit: running it again rewrites this directory). Its hooks capture
each settled exchange into the project's memory files, give each new session
recent memory and each prompt the memories that match it; the `memlane` MCP
server gives the model memory_search, memory_expand, memory_transcript,
memory_write and the other tools; `/memlane:recall <question>` runs the
recall ladder in a forked subagent; `/memlane:memory` shows or switches
memory. Remove it with `{memlane} uninstall claude-code`.
"""


def plugin_files(command: str, server: dict[str, Any], memlane: str) -> dict[str, str]:
    """Every file of the plugin directory (relative path → text)."""
    from memlane.core.version import __version__

    description = "memlane: long-term memory (capture, snapshot, auto-context, recall)"
    files = {
        ".claude-plugin/plugin.json": _json(
            {
                "name": PLUGIN_NAME,
                "version": __version__,
                "description": description,
                "author": {"name": "memlane"},
                "license": "Apache-2.0",
            }
        ),
        ".claude-plugin/marketplace.json": _json(
            {
                "name": MARKETPLACE_NAME,
                "description": "memlane's Claude Code plugin, written by memlane install claude-code",
                "owner": {"name": "memlane"},
                "plugins": [{"name": PLUGIN_NAME, "source": "./", "description": description}],
            }
        ),
        "hooks/hooks.json": _json({"description": description, "hooks": hook_groups(command)}),
        ".mcp.json": _json({"mcpServers": {SERVER_NAME: server}}),
        "README.md": README.format(memlane=memlane),
    }
    files.update(static_files(memlane))
    return files


def write_plugin(directory: Path, files: dict[str, str]) -> bool:
    """Write the plugin directory (only files whose text changed); True when anything did."""
    changed = False
    for relative, text in files.items():
        path = directory / relative
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        changed = True
    return changed


def remove_plugin(directory: Path) -> bool:
    """Remove a plugin directory memlane wrote (it holds nothing of the user's)."""
    if not (directory / ".claude-plugin" / "plugin.json").is_file():
        return False
    shutil.rmtree(directory)
    with contextlib.suppress(OSError):  # its parent ($MEMLANE_HOME/claude-code) when empty
        directory.parent.rmdir()
    return True
