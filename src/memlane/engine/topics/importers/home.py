"""The user's home and ``~`` as the given environment says (tests pass their own)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def home_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def expand_home(value: str, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return home_dir(env) / value[2:]
    return Path(value)
