"""Config files on disk: read a TOML file, write one ``[section] key = value``
file, and set or unset one key in it atomically.

Only flat sections of scalars are ever written, so a small writer does;
secrets are refused unless they are an ``env:VAR`` reference.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.config.key import SECRET_PREFIX, Scalar, coerce
from memlane.core.config.keys import KEYS, unknown_key
from memlane.core.errors import ConfigError, ConfigSyntaxError


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigSyntaxError(
            f"{path} is not valid TOML: {exc}", "fix or remove the file"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def render_toml(data: Mapping[str, Mapping[str, Scalar]]) -> str:
    """A small TOML writer for flat ``[section] key = scalar`` files."""
    lines: list[str] = []
    for section in sorted(data):
        if lines:
            lines.append("")
        lines.append(f"[{section}]")
        for key in sorted(data[section]):
            lines.append(f"{key} = {_toml_scalar(data[section][key])}")
    return "\n".join(lines) + "\n"


def _toml_scalar(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def set_value(path: Path, name: str, raw: str | None) -> None:
    """Set (or with ``raw`` None, unset) one key in a config file, atomically."""
    spec = KEYS.get(name)
    if spec is None:
        raise unknown_key(name)
    data: dict[str, dict[str, Scalar]] = {
        s: dict(b) for s, b in read_toml(path).items() if isinstance(b, dict)
    }
    section, key = name.split(".", 1)
    if raw is None:
        data.get(section, {}).pop(key, None)
    else:
        # Checked before anything is written: a bad value never reaches the file.
        value = coerce(spec, raw, None)
        if spec.secret and not str(value).startswith(SECRET_PREFIX):
            raise ConfigError(
                f"{name} is a secret and is never stored in a file",
                f"use `memlane config set {name} env:VARIABLE` and export the secret",
            )
        data.setdefault(section, {})[key] = value
    data = {s: b for s, b in data.items() if b}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_toml(data))
