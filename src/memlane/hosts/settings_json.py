"""A host's JSON settings file, edited as a round trip that keeps the user's formatting.

The installers (``hosts/pi/install.py``, ``hosts/claude_code/install.py``)
read a settings file into a dict, change a few keys and write it back with the
file's own indentation, key order and non-ASCII text, so every setting they
did not touch reads as it did.

``read_record`` reads an installer's record of what it did (any damage
reads as no record).

``Edits`` is what an installer changed in one file, kept in its record so
uninstall reverts exactly that: keys it set (and what they held before),
items it appended to lists, containers it created. When the reverted data
equals the file's data before the first install, uninstall writes the
original text back byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane.core.atomic import write_atomic
from memlane.core.errors import ConfigError

Key = list[str]


def indent_of(text: str) -> int | str:
    """The indentation of a JSON text (spaces or a tab), 2 when it has none."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def read_settings(path: Path) -> tuple[dict[str, Any], int | str, bool]:
    """(settings, indent, existed); ConfigError when the file is not a JSON object."""
    if not path.exists():
        return {}, 2, False
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, 2, True
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc})", "fix the file, then run the command again"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object", "fix the file first")
    return data, indent_of(text), True


def read_record(path: Path) -> dict[str, Any]:
    """An installer's record: the JSON object in *path*, or ``{}`` when it is
    missing, unreadable or not an object (nothing recorded to revert)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def dump(data: Any, indent: int | str = 2) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def write_json(path: Path, data: Any, indent: int | str = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump(data, indent))


def _container(data: dict[str, Any], at: Key, created: list[Key], last: Any) -> Any:
    """The value at *at*, creating dicts on the way (and *last* at the end) when missing."""
    node: Any = data
    for depth, name in enumerate(at):
        if not isinstance(node, dict):
            raise ConfigError(f"{'.'.join(at[:depth])} is not a JSON object", "fix the file first")
        if name not in node:
            node[name] = {} if depth < len(at) - 1 else last
            created.append(at[: depth + 1])
        node = node[name]
    return node


def _lookup(data: dict[str, Any], at: Key) -> tuple[dict[str, Any] | None, Any]:
    """(the dict holding the last key, the value) or (None, None) when the path is gone."""
    node: Any = data
    for name in at[:-1]:
        if not isinstance(node, dict) or name not in node:
            return None, None
        node = node[name]
    if not isinstance(node, dict) or at[-1] not in node:
        return None, None
    return node, node[at[-1]]


@dataclass
class Edits:
    """What install changed in one JSON file (stored in the installer's record)."""

    path: str
    created_file: bool = False
    original: str | None = None  # the text before the first install
    created: list[Key] = field(default_factory=list)
    keys: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)

    def set_key(self, data: dict[str, Any], at: Key, value: Any) -> None:
        """``data[at] = value``, remembering what the key held before."""
        parent = _container(data, at[:-1], self.created, {}) if len(at) > 1 else data
        if not isinstance(parent, dict):
            raise ConfigError(f"{self.path}: {'.'.join(at[:-1])} is not a JSON object", "fix it")
        entry: dict[str, Any] = {"at": at, "had": at[-1] in parent}
        if entry["had"]:
            if parent[at[-1]] == value:
                return
            entry["previous"] = parent[at[-1]]
        parent[at[-1]] = value
        self.keys.append(entry)

    def add_item(self, data: dict[str, Any], at: Key, value: Any) -> None:
        """Append *value* to the list at *at* (created when missing) unless it is there."""
        items = _container(data, at, self.created, [])
        if not isinstance(items, list):
            raise ConfigError(f"{self.path}: {'.'.join(at)} is not a list", "fix the file first")
        if value not in items:
            items.append(value)
            self.items.append({"at": at, "value": value})

    def revert(self, data: dict[str, Any]) -> None:
        """Undo the keys and items (those still as install left them), then drop empty
        containers install created."""
        for item in reversed(self.items):
            _, items = _lookup(data, item["at"])
            if isinstance(items, list) and item["value"] in items:
                items.remove(item["value"])
        for entry in reversed(self.keys):
            parent, _ = _lookup(data, entry["at"])
            if parent is None:
                continue
            if entry.get("had"):
                parent[entry["at"][-1]] = entry.get("previous")
            else:
                del parent[entry["at"][-1]]
        for at in sorted(self.created, key=len, reverse=True):
            parent, value = _lookup(data, at)
            if parent is not None and value in ({}, []):
                del parent[at[-1]]
        self.keys, self.items, self.created = [], [], []

    def restored_text(self, data: dict[str, Any], indent: int | str) -> str | None:
        """The text to write after ``revert``: the original bytes when nothing else changed,
        None when the file should go (install created it and it is empty again)."""
        if self.original is not None:
            try:
                if json.loads(self.original or "{}") == data:
                    return self.original
            except ValueError:
                pass
        if self.created_file and not data:
            return None
        return dump(data, indent)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "created_file": self.created_file,
            "original": self.original,
            "created": self.created,
            "keys": self.keys,
            "items": self.items,
        }

    @staticmethod
    def from_json(raw: Any) -> Edits | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            return None

        def listed(name: str) -> list[Any]:
            value = raw.get(name)
            return list(value) if isinstance(value, list) else []

        original = raw.get("original")
        return Edits(
            raw["path"],
            bool(raw.get("created_file")),
            original if isinstance(original, str) else None,
            listed("created"),
            listed("keys"),
            listed("items"),
        )
