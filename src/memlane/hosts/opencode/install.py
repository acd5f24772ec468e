"""``memlane install opencode`` / ``memlane uninstall opencode``.

OpenCode (``opencode-ai`` 1.18) reads ``opencode.json`` from its config
directory (``$XDG_CONFIG_HOME/opencode``, default ``~/.config/opencode``) and
from the project root, loads every JavaScript file in the config directory's
``plugins/``, and the files its ``plugin`` list names. Install writes:

- the plugin, a few lines importing memlane's (integrations/opencode/memlane.js)
  with the memlane it runs and the ``MEMLANE_*`` settings of the install
  (``MEMLANE_HOME`` always): globally ``plugins/memlane.js`` in OpenCode's
  config directory; for ``--project``, a file in
  ``$MEMLANE_HOME/opencode/<project>/`` that the project's ``opencode.json``
  lists in ``plugin`` (a ``.opencode/`` directory would make OpenCode install
  its plugin SDK into the project);
- ``mcp.memlane`` in that ``opencode.json``: memlane's MCP server, a local
  command with the same variables in its ``environment``;
- ``memlane.json`` beside the plugin: the record uninstall reverts from (the
  edits and ``opencode.json``'s text before the first install), owner-only.

Uninstall removes the plugin and reverts the JSON edits; when nothing else
changed, ``opencode.json`` gets its original bytes back (or goes, when install
created it). Both are safe to run again.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import MemlaneError
from memlane.hosts.settings_json import Edits, dump, read_record, read_settings

CONFIG_NAME = "opencode.json"
RECORD_NAME = "memlane.json"
PLUGIN_DIR = "plugins"
PLUGIN_NAME = "memlane.js"
SERVER_KEY = "memlane"
#: Variables of the install's environment the MCP server and the plugin do not get:
#: they are the client's own, or a test's.
CLIENT_ONLY = frozenset({"MEMLANE_NO_HOOKS", "MEMLANE_COMMAND", "MEMLANE_ENGINE"})


@dataclass
class InstallReport:
    config: Path
    plugin: Path
    changed: bool
    lines: list[str] = field(default_factory=list)


def config_dir(project: Path | None, env: dict[str, str] | None = None) -> Path:
    """Where the plugin and the record live: OpenCode's config directory, or for a
    project install ``$MEMLANE_HOME/opencode/<project path as Claude Code names it>``."""
    environ = os.environ if env is None else env
    if project is not None:
        from memlane.transcripts.locate import claude_project_dir_name

        home = Path(memlane_environment(env)["MEMLANE_HOME"])
        return home / "opencode" / claude_project_dir_name(str(project.absolute()))
    xdg = environ.get("XDG_CONFIG_HOME")
    home = Path(environ.get("HOME") or Path.home())
    return (Path(xdg) if xdg else home / ".config") / "opencode"


def config_file(project: Path | None, env: dict[str, str] | None = None) -> Path:
    """The ``opencode.json`` install edits: the project's root one, else the global one."""
    if project is not None:
        return project.absolute() / CONFIG_NAME
    return config_dir(None, env) / CONFIG_NAME


def plugin_file(project: Path | None, env: dict[str, str] | None = None) -> Path:
    """The plugin install writes (``plugins/memlane.js``, or the project's listed file)."""
    base = config_dir(project, env)
    return base / PLUGIN_NAME if project is not None else base / PLUGIN_DIR / PLUGIN_NAME


def plugin_source() -> Path:
    """integrations/opencode/memlane.js of a source checkout, else the wheel's copy."""
    here = Path(__file__).resolve()
    for candidate in (
        here.parents[4] / "integrations" / "opencode" / PLUGIN_NAME,
        here.parents[2] / "integrations" / "opencode" / PLUGIN_NAME,
    ):
        if candidate.is_file():
            return candidate
    raise MemlaneError(
        "the memlane OpenCode plugin is missing from this installation",
        "reinstall memlane (`pip install --force-reinstall memlane`)",
    )


def memlane_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """``MEMLANE_HOME`` (absolute) and every other ``MEMLANE_*`` the user set."""
    environ = os.environ if env is None else env
    home = environ.get("MEMLANE_HOME") or "~/.memlane"
    if home.startswith("~"):
        home = str(Path(environ.get("HOME") or Path.home()) / home[2:])
    out = {"MEMLANE_HOME": str(Path(home).absolute())}
    for key in sorted(environ):
        if key.startswith("MEMLANE_") and key not in out and key not in CLIENT_ONLY:
            out[key] = environ[key]
    return out


def plugin_text(command: str, source: Path, environment: dict[str, str]) -> str:
    options = json.dumps({"command": command, "env": environment}, ensure_ascii=False)
    return (
        "// Written by `memlane install opencode`; `memlane uninstall opencode` removes it.\n"
        f"import {{ memlanePlugin }} from {json.dumps(source.as_uri())};\n"
        f"export const Memlane = memlanePlugin({options});\n"
    )


def install(
    project: Path | None = None,
    *,
    command: str | None = None,
    env: dict[str, str] | None = None,
) -> InstallReport:
    """Write the plugin and the MCP server entry; record how to revert them. Idempotent."""
    from memlane.hosts.mcp.config import memlane_command
    from memlane.hosts.pi.install import memlane_executable

    exe = command or memlane_executable()
    argv = [exe] if exe else memlane_command()
    environment = memlane_environment(env)
    base = config_dir(project, env)
    config_path = config_file(project, env)
    record_path = base / RECORD_NAME
    plugin_path = plugin_file(project, env)
    record = read_record(record_path)

    data, indent, existed = read_settings(config_path)
    before = config_path.read_text(encoding="utf-8") if existed else None
    edits = Edits.from_json(record.get("config"))
    if edits is None or edits.path != str(config_path):
        edits = Edits(str(config_path), created_file=not existed, original=before)
    edits.revert(data)
    server: dict[str, Any] = {
        "type": "local",
        "command": [*argv, "mcp"],
        "environment": environment,
        "enabled": True,
    }
    edits.set_key(data, ["mcp", SERVER_KEY], server)
    if project is not None:
        edits.add_item(data, ["plugin"], plugin_path.as_uri())
    if not existed or "$schema" not in data:
        # OpenCode writes "$schema" into a config that lacks it: written here, uninstall
        # can take it out again.
        edits.set_key(data, ["$schema"], "https://opencode.ai/config.json")

    lines: list[str] = []
    changed = False
    text = dump(data, indent)
    if before is None or json.loads(before or "{}") != data:
        config_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(config_path, text)
        lines.append(f"added the memlane MCP server to {config_path}")
        changed = True
    dir_created = record.get("plugin_dir_created", not plugin_path.parent.exists())
    plugin = plugin_text(argv[0] if exe else "memlane", plugin_source(), environment)
    if not plugin_path.is_file() or plugin_path.read_text(encoding="utf-8") != plugin:
        plugin_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(plugin_path, plugin)
        lines.append(f"wrote the memlane plugin {plugin_path}")
        changed = True
    new_record = {
        "config": edits.to_json(),
        "plugin": str(plugin_path),
        "plugin_dir_created": bool(dir_created),
    }
    if new_record != record:
        base.mkdir(parents=True, exist_ok=True)
        write_atomic(record_path, dump(new_record), new_file_mode=0o600)
    if changed:
        lines.append("restart OpenCode to load it; `memlane uninstall opencode` removes it")
    else:
        lines.append(f"memlane is installed in OpenCode already ({config_path})")
    return InstallReport(config_path, plugin_path, changed, lines)


def uninstall(project: Path | None = None, *, env: dict[str, str] | None = None) -> InstallReport:
    """Revert ``install``: the plugin file goes, ``opencode.json`` gets its bytes back."""
    base = config_dir(project, env)
    config_path = config_file(project, env)
    record_path = base / RECORD_NAME
    plugin_path = plugin_file(project, env)
    record = read_record(record_path)
    lines: list[str] = []
    changed = False
    if plugin_path.is_file():
        plugin_path.unlink()
        lines.append(f"removed {plugin_path}")
        changed = True
        if record.get("plugin_dir_created"):
            with contextlib.suppress(OSError):  # something else lives there now
                plugin_path.parent.rmdir()
    edits = Edits.from_json(record.get("config"))
    if edits is not None and config_path.exists():
        data, indent, _ = read_settings(config_path)
        before = config_path.read_text(encoding="utf-8")
        edits.revert(data)
        text = edits.restored_text(data, indent)
        if text is None:
            config_path.unlink()
            lines.append(f"removed {config_path} (install had created it)")
            changed = True
        elif text != before:
            write_atomic(config_path, text)
            lines.append(f"restored {config_path}")
            changed = True
    if record_path.exists():
        record_path.unlink()
    if project is not None:
        with contextlib.suppress(OSError):  # memlane's own directory for the project
            base.rmdir()
    if not changed:
        lines.append("memlane was not installed in OpenCode: nothing to remove")
    return InstallReport(config_path, plugin_path, changed, lines)
