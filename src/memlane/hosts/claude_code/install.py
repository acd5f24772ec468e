"""``memlane install claude-code`` / ``memlane uninstall claude-code``.

Two modes, two scopes. The scope picks the settings file: ``--user`` is
``settings.json`` in Claude Code's configuration directory
(``$CLAUDE_CONFIG_DIR``, default ``~/.claude``), ``--project`` the project's
``.claude/settings.json``.

* **plugin** (the default): memlane's plugin directory (``plugin.py``) is
  written under ``$MEMLANE_HOME/claude-code/plugin`` and the settings file
  gets ``extraKnownMarketplaces.memlane`` (a ``directory`` source naming it)
  and ``enabledPlugins["memlane@memlane"]``. Claude Code then loads the
  hooks, the MCP server, the skill and the commands at start, headless
  (``claude -p``) too, with no ``/plugin`` step. The plugin's tools are
  named ``mcp__plugin_memlane_memlane__*``.
* **settings**, for people who keep plugins off: the five hooks go into the
  settings file itself, the MCP server ``memlane`` into the project's
  ``.mcp.json`` (approved in the settings with ``enabledMcpjsonServers``) or,
  for ``--user``, the top-level ``mcpServers`` of ``~/.claude.json``
  (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), and the skill and
  commands are copied under ``skills/`` and ``commands/`` beside the settings
  file. Tools are named ``mcp__memlane__*``.

Both add the allow rules for memlane's tools and its recall skill to
``permissions.allow``, and
neither touches Claude Code's own auto memory. Every JSON file is edited as
a round trip keeping its formatting (``hosts/settings_json.py``); the record
``memlane-install.json`` beside the settings file keeps what was changed,
so uninstall takes out exactly that and, when nothing else changed since,
writes each file's original bytes back. Running install again changes
nothing (or only what moved, e.g. a new Python).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import ConfigError
from memlane.hosts.claude_code import plugin, trust
from memlane.hosts.settings_json import Edits, dump, read_record, read_settings, write_json
from memlane.transcripts.locate import claude_dir

RECORD_NAME = "memlane-install.json"
SETTINGS_NAME = "settings.json"
MODES = ("plugin", "settings")
# A file this large is not kept in the record: uninstall round-trips it instead.
ORIGINAL_MAX_BYTES = 1 << 20


@dataclass
class InstallReport:
    mode: str
    settings: Path
    record: Path
    changed: bool
    plugin_dir: Path | None = None
    lines: list[str] = field(default_factory=list)


def config_dir(project: Path | None, env: dict[str, str] | None = None) -> Path:
    """Where the settings file lives: ``<project>/.claude`` or Claude Code's config directory."""
    if project is not None:
        return project.absolute() / ".claude"
    return claude_dir(env).absolute()


def user_mcp_file(env: dict[str, str] | None = None) -> Path:
    """Claude Code's global state file, whose ``mcpServers`` are the user-scope servers."""
    return trust.state_file(env)


def default_plugin_dir() -> Path:
    from memlane.core.paths import memlane_home

    return memlane_home() / "claude-code" / "plugin"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Files:
    """The JSON files of one install, each read once, edited in memory, written at the end."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.previous: dict[str, Edits] = {}
        for raw in record.get("files", []):
            edits = Edits.from_json(raw)
            if edits is not None:
                self.previous[edits.path] = edits
        self.open: dict[str, tuple[dict[str, Any], int | str, Edits, str | None]] = {}

    def edits(self, path: Path, *, keep_original: bool = True) -> tuple[dict[str, Any], Edits]:
        """The file's data (what an earlier install added taken out) and its edits.

        *keep_original* False: the record keeps no copy of the text (Claude Code's
        state file, which holds account data; Claude Code writes it in the layout the
        round trip reproduces)."""
        key = str(path)
        if key not in self.open:
            data, indent, existed = read_settings(path)
            before = path.read_text(encoding="utf-8") if existed else None
            edits = self.previous.pop(key, None)
            if edits is None:
                small = before is not None and len(before) <= ORIGINAL_MAX_BYTES
                kept = before if small and keep_original else None
                edits = Edits(key, created_file=not existed, original=kept)
            edits.revert(data)  # what an earlier install added, taken out first
            self.open[key] = (data, indent, edits, before)
        data, _, edits, _ = self.open[key]
        return data, edits

    def revert_left_over(self) -> None:
        """Files an earlier install changed that this one does not (another mode)."""
        for key in list(self.previous):
            self.edits(Path(key))

    def commit(self) -> tuple[list[Edits], list[str]]:
        """Write what changed; (the edits to record, a line per file written)."""
        kept, lines = [], []
        for key, (data, indent, edits, before) in self.open.items():
            path = Path(key)
            if edits.keys or edits.items:
                kept.append(edits)
                if before is not None and _parsed(before) == data:
                    continue  # installed already: the file stays as it is
                text: str | None = dump(data, indent)
                verb = "updated"
            else:
                text = edits.restored_text(data, indent)
                verb = "restored"
            if text == before:
                continue
            if text is None:
                path.unlink(missing_ok=True)
                lines.append(f"removed {path} (install had created it)")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, text)
                lines.append(f"{verb} {path}")
        return kept, lines


def _parsed(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return None


def _copy_static(
    base: Path, memlane: str, record: dict[str, Any], lines: list[str]
) -> list[dict[str, str]]:
    """Settings mode: the skill and the command under *base*; never over a file of the user's."""
    owned = {c["path"]: c["sha256"] for c in record.get("copied", []) if isinstance(c, dict)}
    copied = []
    for relative, text in plugin.static_files(memlane).items():
        path = base / relative
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current is not None and current != text and _sha(current) != owned.get(str(path)):
            lines.append(f"kept your {path}: memlane's {relative} was not written")
            continue
        if current != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
            lines.append(f"wrote {path}")
        copied.append({"path": str(path), "sha256": _sha(text)})
    return copied


def _remove_copied(copied: list[Any], keep: set[str], base: Path, lines: list[str]) -> None:
    for entry in copied:
        if not isinstance(entry, dict) or entry.get("path") in keep:
            continue
        path = Path(str(entry.get("path")))
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if _sha(text) != entry.get("sha256"):
            lines.append(f"kept {path}: it changed since memlane wrote it")
            continue
        path.unlink()
        lines.append(f"removed {path}")
        for parent in path.parents:  # the skill's directory, skills/, commands/ when empty
            if parent == base or not parent.is_relative_to(base) or any(parent.iterdir()):
                break
            parent.rmdir()


def _plugin_users(directory: Path) -> Path:
    return directory / ".memlane-installs.json"


def _register_plugin_user(directory: Path, settings: Path, add: bool) -> list[str]:
    """The settings files that load this plugin directory (it goes with the last one)."""
    path = _plugin_users(directory)
    try:
        users = [str(u) for u in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        users = []
    users = [u for u in users if u != str(settings)] + ([str(settings)] if add else [])
    if users:
        write_json(path, sorted(users))
    return users


def install(
    project: Path | None = None,
    *,
    mode: str = "plugin",
    env: dict[str, str] | None = None,
    python: str | None = None,
    memlane: str | None = None,
    plugin_dir: Path | None = None,
) -> InstallReport:
    """Install memlane into Claude Code (see the module docstring). Idempotent."""
    from memlane.core.version import __version__

    if mode not in MODES:
        raise ConfigError(f"unknown install mode {mode!r}", f"use one of {', '.join(MODES)}")
    base = config_dir(project, env)
    settings_path = base / SETTINGS_NAME
    record_path = base / RECORD_NAME
    record = read_record(record_path)
    created_base = bool(record.get("created_dir")) if record else not base.exists()
    exe = memlane if memlane is not None else plugin.memlane_executable()
    command = plugin.hook_command(python)
    server = plugin.mcp_server(exe, python)
    shown_exe = exe or f"{python or 'python'} -m memlane.cli.main"
    files = _Files(record)
    lines: list[str] = []
    directory = (plugin_dir or default_plugin_dir()).absolute()
    settings, edits = files.edits(settings_path)

    if mode == "plugin":
        wrote = plugin.write_plugin(directory, plugin.plugin_files(command, server, shown_exe))
        _register_plugin_user(directory, settings_path, add=True)
        if wrote:
            lines.append(f"wrote the memlane plugin (also a marketplace) to {directory}")
        source = {"source": {"source": "directory", "path": str(directory)}}
        edits.set_key(settings, ["extraKnownMarketplaces", plugin.MARKETPLACE_NAME], source)
        edits.set_key(settings, ["enabledPlugins", plugin.PLUGIN_ID], True)
        edits.add_item(settings, ["permissions", "allow"], plugin.PLUGIN_TOOL_PREFIX)
        edits.add_item(settings, ["permissions", "allow"], plugin.PLUGIN_SKILL_RULE)
    else:
        for event, groups in plugin.hook_groups(command).items():
            for group in groups:
                edits.add_item(settings, ["hooks", event], group)
        edits.add_item(settings, ["permissions", "allow"], plugin.SETTINGS_TOOL_PREFIX)
        edits.add_item(settings, ["permissions", "allow"], plugin.SETTINGS_SKILL_RULE)
        if project is not None:
            mcp_path = project.absolute() / ".mcp.json"
            edits.add_item(settings, ["enabledMcpjsonServers"], plugin.SERVER_NAME)
        else:
            mcp_path = user_mcp_file(env)
        mcp, mcp_edits = files.edits(mcp_path, keep_original=project is not None)
        mcp_edits.set_key(mcp, ["mcpServers", plugin.SERVER_NAME], server)
    files.revert_left_over()
    kept, written = files.commit()
    lines += written
    copied = _copy_static(base, shown_exe, record, lines) if mode == "settings" else []
    _remove_copied(record.get("copied", []), {c["path"] for c in copied}, base, lines)
    if mode == "settings" and record.get("mode") == "plugin":
        _drop_plugin(Path(str(record.get("plugin_dir"))), settings_path, env, lines)

    mcp_command = [str(server["command"]), *map(str, server["args"])]
    new_record: dict[str, Any] = {
        "mode": mode,
        "memlane_version": __version__,
        "hook_command": command,
        "mcp_command": mcp_command,
        "plugin_dir": str(directory) if mode == "plugin" else None,
        "files": [e.to_json() for e in kept],
        "copied": copied,
        "created_dir": created_base,
    }
    changed = bool(written or lines)
    if new_record != record:
        # Private: it keeps the settings' original text, which may hold the user's env secrets.
        record_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(record_path, dump(new_record), mode=0o600)
        changed = True
    if not changed:
        lines.append(f"memlane is already installed in Claude Code ({mode} mode, {settings_path})")
    else:
        lines.append(f"hooks run: {command}")
        lines.append(f"MCP server: {' '.join(mcp_command)}")
        lines.append("start a new Claude Code session to load it")
    if project is not None:
        lines += _trust_lines(project.absolute(), mode, env)
    return InstallReport(mode, settings_path, record_path, changed, directory, lines)


def _trust_lines(project: Path, mode: str, env: dict[str, str] | None) -> list[str]:
    """What a project install needs from the user: Claude Code's trust in the folder."""
    by = trust.trusted_by(project, env)
    if by is not None:
        return [f"Claude Code trusts {project} ({by}), so it loads memlane there"]
    return [
        f"Claude Code has not trusted {project} yet: until you trust it, "
        f"{trust.untrusted_effect(mode)}; {trust.how_to_trust(project)}"
    ]


def _drop_plugin(
    directory: Path, settings: Path, env: dict[str, str] | None, lines: list[str]
) -> None:
    if not _register_plugin_user(directory, settings, add=False) and plugin.remove_plugin(
        directory
    ):
        lines.append(f"removed the memlane plugin directory {directory}")
        _forget_marketplace(directory, env, lines)


def _forget_marketplace(directory: Path, env: dict[str, str] | None, lines: list[str]) -> None:
    """Drop the entry Claude Code made in its own state for memlane's marketplace (it names
    the directory just removed, and Claude Code keeps it otherwise)."""
    path = claude_dir(env).absolute() / "plugins" / "known_marketplaces.json"
    try:
        known, indent, _ = read_settings(path)
    except ConfigError:
        return
    entry = known.get(plugin.MARKETPLACE_NAME)
    source = entry.get("source") if isinstance(entry, dict) else None
    if isinstance(source, dict) and source.get("path") == str(directory):
        del known[plugin.MARKETPLACE_NAME]
        write_json(path, known, indent)
        lines.append(f"removed the memlane marketplace from {path}")


def uninstall(project: Path | None = None, *, env: dict[str, str] | None = None) -> InstallReport:
    """Revert ``install``: what it changed in each file, the files it wrote, the record."""
    base = config_dir(project, env)
    settings_path = base / SETTINGS_NAME
    record_path = base / RECORD_NAME
    record = read_record(record_path)
    mode = str(record.get("mode") or "plugin")
    lines: list[str] = []
    if not record:
        lines.append(f"memlane was not installed in Claude Code here (no {record_path})")
        return InstallReport(mode, settings_path, record_path, False, None, lines)
    files = _Files(record)
    files.revert_left_over()
    _, written = files.commit()
    lines += written
    _remove_copied(record.get("copied", []), set(), base, lines)
    raw_dir = record.get("plugin_dir")
    directory = Path(raw_dir) if isinstance(raw_dir, str) else None
    if directory is not None:
        _drop_plugin(directory, settings_path, env, lines)
    record_path.unlink()
    lines.append(f"removed {record_path}")
    if record.get("created_dir"):
        with contextlib.suppress(OSError):  # only when nothing else is in it
            base.rmdir()
    lines.append("start a new Claude Code session to unload it")
    return InstallReport(mode, settings_path, record_path, True, directory, lines)


@dataclass(frozen=True)
class Installed:
    """memlane installed in Claude Code, as ``memlane status`` reports it."""

    scope: str  # "project" or "user"
    mode: str  # "plugin" or "settings"
    settings: Path
    folder: Path | None  # the project folder (project scope)
    trusted_by: Path | None

    @property
    def problem(self) -> str | None:
        if self.scope != "project" or self.trusted_by is not None or self.folder is None:
            return None
        return (
            f"claude code: memlane is installed in {self.settings}, but Claude Code has not "
            f"trusted {self.folder}, so {trust.untrusted_effect(self.mode)}; "
            + trust.how_to_trust(self.folder)
        )

    def line(self) -> str:
        where = f"{self.mode} mode, {self.settings}"
        if self.scope == "user":
            return f"installed for you ({where})"
        if self.trusted_by is None:
            return f"installed in this project ({where}); this folder is not trusted yet"
        return f"installed in this project ({where}); trusted ({self.trusted_by})"

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "mode": self.mode,
            "settings": str(self.settings),
            "folder": str(self.folder) if self.folder else None,
            "trusted_by": str(self.trusted_by) if self.trusted_by else None,
            "line": self.line(),
            "problem": self.problem,
        }


def installed(folders: list[Path], env: dict[str, str] | None = None) -> Installed | None:
    """How memlane is installed in Claude Code for a project in one of *folders*
    (its scope and repository folders): the project's install first, else the user's."""
    for folder in dict.fromkeys(folders):
        record = read_record(folder / ".claude" / RECORD_NAME)
        if record:
            settings = folder / ".claude" / SETTINGS_NAME
            by = trust.trusted_by(folder, env)
            return Installed("project", _mode(record), settings, folder, by)
    base = config_dir(None, env)
    record = read_record(base / RECORD_NAME)
    if record:
        return Installed("user", _mode(record), base / SETTINGS_NAME, None, None)
    return None


def _mode(record: dict[str, Any]) -> str:
    mode = record.get("mode")
    return mode if isinstance(mode, str) and mode in MODES else "plugin"
