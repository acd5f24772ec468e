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


CACHE_DIR_ENV = "MEMLANE_CACHE_DIR"


def cache_dir() -> Path:
    """Derived, re-creatable files (model verification, the int8 model).

    ``$MEMLANE_CACHE_DIR`` moves it (tests share one across homes)."""
    raw = os.environ.get(CACHE_DIR_ENV)
    return Path(raw).expanduser().resolve() if raw else memlane_home() / "cache"


def global_config_path() -> Path:
    return memlane_home() / "config.toml"


def trust_file_path() -> Path:
    return memlane_home() / "trusted.json"
