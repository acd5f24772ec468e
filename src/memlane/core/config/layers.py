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
from memlane.core.config.keys import KEYS, SECRET_PREFIX, Scalar, coerce
from memlane.core.config.resolved import Config, Value
from memlane.core.config.trust import PROJECT_CONFIG_NAME, project_file
from memlane.core.errors import ConfigError
from memlane.core.paths import global_config_path, trust_file_path


def _layer_from_file(path: Path) -> dict[str, Scalar]:
    data = read_toml(path)
    out: dict[str, Scalar] = {}
    for section, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(
                f"{path}: top-level {section!r} must be a [section] table",
                "see `memlane config list` for the known settings",
            )
        for key, raw in body.items():
            name = f"{section}.{key}"
            spec = KEYS.get(name)
            if spec is None:
                # Later versions add keys: tolerate, but do not guess.
                continue
            value = coerce(spec, raw, str(path))
            if spec.secret and not str(value).startswith(SECRET_PREFIX):
                raise ConfigError(
                    f"{path} stores a secret in {name}",
                    f'write {name} = "env:VARIABLE" and export the secret instead',
                )
            out[name] = value
    return out


def _layer_from_env(env: Mapping[str, str]) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for spec in KEYS.values():
        for var in (spec.env_name, *spec.aliases):
            if var in env and env[var] != "":
                out[spec.name] = coerce(spec, env[var], f"${var}")
                break
    return out


def load_config(repository_dir: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    values = {name: Value(spec.default, "default") for name, spec in KEYS.items()}
    for name, value in _layer_from_file(global_config_path()).items():
        values[name] = Value(value, "global")
    project = project_file(repository_dir) if repository_dir is not None else None
    notices: list[str] = []
    if project is not None and project.trusted:
        for name, value in _layer_from_file(project.path).items():
            values[name] = Value(value, "project")
    elif project is not None and project.notice is not None:
        notices.append(project.notice)
    for name, value in _layer_from_env(env).items():
        values[name] = Value(value, "env")
    return Config(
        values=values,
        project_file=project.path if project is not None else None,
        project_trusted=project is not None and project.trusted,
        notices=notices,
    )


def config_sources(repository_dir: Path | None) -> list[Path]:
    """Every file ``load_config`` reads for *repository_dir* (besides the
    environment), for a long-lived caller that reloads only when one changed."""
    files = [global_config_path(), trust_file_path()]
    if repository_dir is not None:
        files.append(repository_dir / PROJECT_CONFIG_NAME)
        files.append(Path(os.path.realpath(repository_dir)) / PROJECT_CONFIG_NAME)
    return files
