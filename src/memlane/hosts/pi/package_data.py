"""Data files the pi package reads beside its modules, generated from memlane's Python.

The TypeScript cannot import Python: what it must share with the engine (the
redaction rules, hosts/pi/redaction_js.py; the tool declarations,
hosts/pi/tools_js.py) is exported as JSON into
``integrations/pi/extensions/memlane/``, each file kept equal to its export
by a test. ``DataFile`` is the part they share: where such a file lives,
its text, and the command that writes it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class DataFile:
    """One generated file: *name* beside the pi package's modules, *export* its data."""

    def __init__(self, name: str, export: Callable[[], Any]) -> None:
        self.name = name
        self.export = export

    def path(self) -> Path:
        """Where the pi package keeps it (a source checkout's, else the wheel's copy)."""
        from memlane.hosts.pi.install import package_dir

        return package_dir() / "extensions" / "memlane" / self.name

    def render(self) -> str:
        """Its text: the export as indented JSON, one trailing newline."""
        return json.dumps(self.export(), indent=1, ensure_ascii=False) + "\n"

    def main(self, argv: list[str] | None = None) -> int:
        """``python -m <exporter> [PATH]``: the text into PATH, else into ``path()``."""
        args = sys.argv[1:] if argv is None else argv
        target = Path(args[0]) if args else self.path()
        target.write_text(self.render(), encoding="utf-8")
        print(f"wrote {target}")
        return 0
