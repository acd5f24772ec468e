"""Claude Code's slash-command lines: what the person typed, and what the harness printed.

A slash command is written as a user line of tags, not words::

    <command-name>/compact</command-name>
    <command-message>compact</command-message>
    <command-args>keep the schema notes</command-args>

and a local command's output as ``<local-command-stdout>...</local-command-stdout>``
(or ``-stderr``). A ``!cmd`` shell line is written the same way: a user line
``<bash-input>git status</bash-input>``, then one holding
``<bash-stdout>...</bash-stdout><bash-stderr>...</bash-stderr>`` (both tags in
one line). The command lines are the person's words (``/compact keep the schema
notes``, ``!git status``); the output lines are the harness talking, not
conversation.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<(command-name|command-message|command-args)>(.*?)</\1>", re.DOTALL)
_BASH_INPUT = re.compile(r"\s*<bash-input>(.*?)</bash-input>\s*", re.DOTALL)
_OUTPUT_TAG = r"<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr)>.*?</\1>"
# One or more output tags and nothing else: a shell line writes stdout and stderr together.
_OUTPUT = re.compile(rf"\s*(?:{_OUTPUT_TAG}\s*)+", re.DOTALL)


def typed_command(text: str) -> str | None:
    """``/name args`` when *text* is a slash command's line (only its tags),
    ``!cmd`` when it is a shell line, else None."""
    shell = _BASH_INPUT.fullmatch(text)
    if shell is not None:
        return f"!{shell.group(1).strip()}"
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
    """Whether *text* is only a local or shell command's printed output."""
    return bool(text) and _OUTPUT.fullmatch(text) is not None
