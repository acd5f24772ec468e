"""One configuration resolver, four layers, later wins.

built-in defaults → global ``$MEMLANE_HOME/config.toml`` → project
``<repository dir>/.memlane.toml`` (only when trusted) → environment.

Every key is declared once in ``KEYS`` (keys.py) with its type, default,
range and help, and checked in one place (key.py's ``coerce``) at ``config
set`` and when a file or the environment is loaded; layers.py stacks the
layers and keeps each value's origin; trust.py decides whether a project
file may be read; files.py reads and writes the TOML files; resolved.py is
the result with its typed sections; reference.py writes
docs/configuration.md. Secrets are referenced as ``env:VAR`` and never
stored in a file.

This module only re-exports, so importers name ``memlane.core.config``.
"""

from __future__ import annotations

from memlane.core.config.files import read_toml, render_toml, set_value
from memlane.core.config.key import SECRET_PREFIX, Key, Scalar, coerce
from memlane.core.config.keys import KEYS
from memlane.core.config.layers import load_config
from memlane.core.config.resolved import Config, Value
from memlane.core.config.trust import (
    CONFIG_MAX_BYTES,
    PROJECT_CONFIG_NAME,
    set_trusted,
    trusted_projects,
)

__all__ = [
    "CONFIG_MAX_BYTES",
    "KEYS",
    "PROJECT_CONFIG_NAME",
    "SECRET_PREFIX",
    "Config",
    "Key",
    "Scalar",
    "Value",
    "coerce",
    "load_config",
    "read_toml",
    "render_toml",
    "set_trusted",
    "set_value",
    "trusted_projects",
]
