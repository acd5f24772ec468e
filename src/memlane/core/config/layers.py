"""The four layers, later wins:

built-in defaults → global ``$MEMLANE_HOME/config.toml`` → project
``<repository dir>/.memlane.toml`` (only when trusted, trust.py) →
environment.

Each value keeps the name of the layer it came from, so
``memlane config list --resolved`` can show where a setting was made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memlane.core.config.files import read_toml
from memlane.core.config.key import SECRET_PREFIX, Scalar, coerce
from memlane.core.config.keys import KEYS
from memlane.core.config.resolved import Config, Value
from memlane.core.config.trust import PROJECT_CONFIG_NAME, project_file
from memlane.core.errors import ConfigError, ConfigSyntaxError
from memlane.core.paths import global_config_path, trust_file_path


class _Findings:
    """What loading met besides good values: bad ones (``problems``, each with
    the key it left at a lower layer's value) and harmless ``notices``."""

    def __init__(self) -> None:
        self.bad: list[tuple[str, str | None]] = []  # (one line, key or None)
        self.notices: list[str] = []

    def problems(self, values: dict[str, Value]) -> list[str]:
        out = []
        for line, name in self.bad:
            if name is not None:
                used = values[name]
                shown = _shown(used.value)
                line += f"; {name} stays {shown} ({used.layer}) until that is fixed"
            out.append(line)
        return out


def _shown(value: Scalar | None) -> str:
    """A value as a file would hold it: ``true``, ``5``, ``'onnx'``."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _layer_from_file(path: Path, found: _Findings) -> dict[str, Scalar]:
    """The file's good values. Whatever is wrong in it is not used and is
    reported, so a typo never takes memory down with it (docs/configuration.md)."""
    try:
        data = read_toml(path)
    except ConfigSyntaxError as exc:  # an unreadable file is the machine's: that raises
        found.bad.append((f"{exc.message}; none of its settings are used", None))
        return {}
    out: dict[str, Scalar] = {}
    for section, body in data.items():
        if not isinstance(body, dict):
            found.bad.append((f"{path}: top-level {section!r} must be a [section] table", None))
            continue
        for key, raw in body.items():
            name = f"{section}.{key}"
            spec = KEYS.get(name)
            if spec is None:
                # Later versions add keys: tolerate, but do not guess.
                found.notices.append(
                    f"{path}: unknown setting {name} is ignored (`memlane config list` "
                    "names them all)"
                )
                continue
            try:
                value = coerce(spec, raw, str(path))
            except ConfigError as exc:
                found.bad.append((exc.message, name))
                continue
            if spec.secret and not str(value).startswith(SECRET_PREFIX):
                found.bad.append(
                    (
                        f"{path} stores a secret in {name}, which is never read from a file: "
                        f'write {name} = "env:VARIABLE" and export the secret instead',
                        name,
                    )
                )
                continue
            out[name] = value
    return out


def _layer_from_env(env: Mapping[str, str], found: _Findings) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for spec in KEYS.values():
        for var in (spec.env_name, *spec.aliases):
            if var in env and env[var] != "":
                try:
                    out[spec.name] = coerce(spec, env[var], f"${var}")
                except ConfigError as exc:
                    found.bad.append((exc.message, spec.name))
                break
    return out


def load_config(repository_dir: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    found = _Findings()
    values = {name: Value(spec.default, "default") for name, spec in KEYS.items()}
    for name, value in _layer_from_file(global_config_path(), found).items():
        values[name] = Value(value, "global")
    project = project_file(repository_dir) if repository_dir is not None else None
    notices: list[str] = []
    if project is not None and project.trusted:
        for name, value in _layer_from_file(project.path, found).items():
            values[name] = Value(value, "project")
    elif project is not None and project.notice is not None:
        notices.append(project.notice)
    for name, value in _layer_from_env(env, found).items():
        values[name] = Value(value, "env")
    return Config(
        values=values,
        project_file=project.path if project is not None else None,
        project_trusted=project is not None and project.trusted,
        notices=[*notices, *found.notices],
        problems=found.problems(values),
    )


def config_sources(repository_dir: Path | None) -> list[Path]:
    """Every file ``load_config`` reads for *repository_dir* (besides the
    environment), for a long-lived caller that reloads only when one changed."""
    files = [global_config_path(), trust_file_path()]
    if repository_dir is not None:
        files.append(repository_dir / PROJECT_CONFIG_NAME)
        files.append(Path(os.path.realpath(repository_dir)) / PROJECT_CONFIG_NAME)
    return files
