"""Taking memlane's block out of Codex's config.toml again, whatever happened to it since.

In order: the exact text install appended (the file is then byte for byte
what it was); else the lines between the two marker comments; else, when
Codex rewrote the file (``codex mcp add`` re-writes every
``[mcp_servers.*]`` table and drops the comment above the first), memlane's
own tables, found by their headers: ``[mcp_servers.memlane]`` and its
``.env``, each ``[[hooks.<Event>]]`` whose ``[[hooks.<Event>.hooks]]``
holds the line that marks memlane's hooks (the record's ``hook_lines``: the
call of memlane's hook tool; an older install's record names its hook
command), and the ``[hooks.state."…"]`` entries install wrote. Nothing else is touched.
"""

from __future__ import annotations

import json
import re
from typing import Any

BEGIN = "# >>> memlane: added by `memlane install codex`; `memlane uninstall codex` removes it"
END = "# <<< memlane"
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*(\]\]?)\s*(#.*)?$")
#: The MCP server's key in ``[mcp_servers]`` (the hooks name it too).
SERVER_KEY = "memlane"
_SERVER_TABLES = frozenset({f"mcp_servers.{SERVER_KEY}", f"mcp_servers.{SERVER_KEY}.env"})


def without_block(text: str, record: dict[str, Any]) -> tuple[str, bool]:
    """*text* with memlane's block taken out; (text, whether any of it was found)."""
    inserted = record.get("inserted")
    if isinstance(inserted, str) and inserted and inserted in text:
        at = text.rfind(inserted)
        return text[:at] + text[at + len(inserted) :], True
    start = text.find(BEGIN)
    end = text.find(END, start) if start >= 0 else -1
    if start >= 0 and end >= 0:
        end += len(END)
        if text[end : end + 1] == "\n":
            end += 1
        head = text[:start]
        if head.endswith("\n\n"):
            head = head[:-1]
        return head + text[end:], True
    return remove_tables(text, record)


def _sections(text: str) -> list[tuple[str | None, list[str]]]:
    """(table name or None for the lines before the first header, its lines)."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines(keepends=True):
        found = _HEADER.match(line)
        if found and found.group(1) in ("[", "[["):
            out.append((found.group(1) + found.group(2), [line]))
        else:
            out[-1][1].append(line)
    return out


def _hook_marks(record: dict[str, Any]) -> frozenset[str]:
    """The lines that mark a hook table as memlane's, from the install record."""
    lines = record.get("hook_lines")
    marks = {line for line in lines if isinstance(line, str)} if isinstance(lines, list) else set()
    command = record.get("hook_command")  # an install from before hooks went through MCP
    if isinstance(command, str):
        marks.add(f"command = {json.dumps(command)}")
    return frozenset(marks)


def _state_header(key: str) -> str:
    return "[hooks.state." + json.dumps(key)


def remove_tables(text: str, record: dict[str, Any]) -> tuple[str, bool]:
    """memlane's tables out of *text*, found by their headers (see the module docstring)."""
    keys = record.get("state_keys")
    ours_state = {_state_header(k) for k in keys} if isinstance(keys, list) else set()
    marks = _hook_marks(record)
    sections = _sections(text)
    drop: set[int] = set()
    for i, (name, _) in enumerate(sections):
        if name is None:
            continue
        bare = name.lstrip("[")
        server = not name.startswith("[[") and bare in _SERVER_TABLES
        if server or name in ours_state or name.replace("'", '"') in ours_state:
            drop.add(i)
        elif name.startswith("[[hooks.") and not bare.endswith(".hooks") and marks:
            following = sections[i + 1] if i + 1 < len(sections) else None
            if following and following[0] == f"[[{bare}.hooks":
                body = "".join(following[1])
                if any(line.strip() in marks for line in body.splitlines()):
                    drop.update({i, i + 1})
    if not drop:
        return text, False
    kept: list[str] = []
    for i, (_, lines) in enumerate(sections):
        if i not in drop:
            kept.extend(line for line in lines if line.strip() not in (BEGIN, END))
    return "".join(kept), True
