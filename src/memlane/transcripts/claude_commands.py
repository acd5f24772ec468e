"""Claude Code's slash-command lines: what the person typed, and what the harness printed.

A slash command is written as a user line of tags, not words::

    <command-name>/compact</command-name>
    <command-message>compact</command-message>
    <command-args>keep the schema notes</command-args>

and a local command's output as ``<local-command-stdout>...</local-command-stdout>``
(or ``-stderr``). The first is the person's words (``/compact keep the schema
notes``); the second is the harness talking, not conversation.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<(command-name|command-message|command-args)>(.*?)</\1>", re.DOTALL)
_OUTPUT = re.compile(r"\s*<(local-command-stdout|local-command-stderr)>.*?</\1>\s*", re.DOTALL)


def typed_command(text: str) -> str | None:
    """``/name args`` when *text* is a slash command's line (only its tags), else None."""
    if "<command-name>" not in text or _TAG.sub("", text).strip():
        return None
    fields = {name: value.strip() for name, value in _TAG.findall(text)}
    name = fields.get("command-name", "")
    if not name:
        return None
    if not name.startswith("/"):
        name = "/" + name
    args = fields.get("command-args", "")
    return f"{name} {args}" if args else name


def is_command_output(text: str) -> bool:
    """Whether *text* is only a local command's printed output."""
    return bool(text) and _OUTPUT.fullmatch(text) is not None
