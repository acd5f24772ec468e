"""``memlane config describe``: every setting as a settings panel needs it.

Each key's value in force and the layer it came from, beside its
declaration (type, what it accepts, default, help, environment name) and
when a change applies (``live``: running sessions follow it from their
next prompt; otherwise from the next session). pi's ``/memory settings``
panel reads the ``--json`` form through the engine (the ``cli`` request),
so the panel and this command show the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.core.config import Config, Key, Value


def describe_settings(repo: Path, config: Config, key: str | None = None) -> dict[str, Any]:
    """The files settings are written to, and each setting (or only *key*)."""
    from memlane.core.config import KEYS, PROJECT_CONFIG_NAME
    from memlane.core.config.keys import unknown_key
    from memlane.core.paths import global_config_path

    if key is not None and key not in KEYS:
        raise unknown_key(key)
    names = [key] if key is not None else list(KEYS)
    return {
        "files": {
            "global": str(global_config_path()),
            "project": str(repo / PROJECT_CONFIG_NAME),
            "project_exists": config.project_file is not None,
            "project_trusted": config.project_trusted,
        },
        "keys": [_described(KEYS[name], config.values[name]) for name in names],
        "problems": list(config.problems),
        "notices": list(config.notices),
    }


def _described(spec: Key, value: Value) -> dict[str, Any]:
    return {
        "key": spec.name,
        "value": value.value,
        "layer": value.layer,
        "default": spec.default,
        "type": spec.type.__name__,
        "allowed": spec.allowed,
        "choices": list(spec.choices),
        "help": spec.help,
        "env": spec.env_name,
        "secret": spec.secret,
        "live": spec.live,
    }


def shown(value: object) -> str:
    """A value as a config file spells it: ``true``, ``5``, ``"onnx"``, (unset)."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def render_described(data: dict[str, Any]) -> str:
    """The human form: one block per setting, then where changes are written."""
    lines: list[str] = []
    for item in data["keys"]:
        when = "applies at once" if item["live"] else "applies from the next session"
        lines.append(f"{item['key']} = {shown(item['value'])}  ({item['layer']}; {when})")
        lines.append(f"    {item['help']}")
        lines.append(
            f"    allowed: {item['allowed']}; default {shown(item['default'])}; "
            f"environment {item['env']}"
        )
    files = data["files"]
    if files["project_exists"]:
        trust = "trusted" if files["project_trusted"] else "not trusted, so not read"
    else:
        trust = "none yet"
    lines.append("")
    lines.append(f"global file:  {files['global']}")
    lines.append(f"project file: {files['project']} ({trust})")
    lines.append("change one: memlane config set KEY VALUE [--project]")
    lines.extend(f"problem: {text}" for text in data["problems"])
    lines.extend(f"note: {text}" for text in data["notices"])
    return "\n".join(lines)
