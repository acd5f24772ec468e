"""Where memlane keeps its own files (indexes, caches, global config)."""

from __future__ import annotations

import os
from pathlib import Path

MEMLANE_HOME_ENV = "MEMLANE_HOME"
DEFAULT_MEMLANE_HOME = "~/.memlane"


def memlane_home() -> Path:
    """``$MEMLANE_HOME``, default ``~/.memlane``; never created here."""
    raw = os.environ.get(MEMLANE_HOME_ENV) or DEFAULT_MEMLANE_HOME
    return Path(raw).expanduser().resolve()


def index_dir() -> Path:
    return memlane_home() / "index"


def cache_dir() -> Path:
    return memlane_home() / "cache"


def global_config_path() -> Path:
    return memlane_home() / "config.toml"


def trust_file_path() -> Path:
    return memlane_home() / "trusted.json"
