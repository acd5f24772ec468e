"""Free text on the command line, and usage errors that never repeat it.

``memlane write``, ``topic add`` and the search commands take the user's own
words, which may start with ``-``: a PEM key (``-----BEGIN ...``), a bullet
(``- fixed ...``), a flag being documented (``-x enables ...``). click
would read those as options and fail with "No such option: <the text>",
echoing a private key's lines to the terminal (and any log of it).

``FreeTextCommand`` reads an argument as an option only when it is one of
the command's own options (``--title``, ``-k5``, ``--kind=topic``) or looks
like a mistyped one (``--jsn``, ``-x``: one dash and one letter, or two
dashes and a word); anything else is text, wherever it stands, as after
``--``. ``safe_usage_message`` is the second line of defence, for every
command: a usage error names an unknown option only when it looks like
one, never lists extra arguments, and is passed through the secret
redaction before it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from typer.core import TyperCommand

#: What a mistyped option looks like: ``-x``, ``--word``, ``--word=value``.
_OPTION_LIKE_RE = re.compile(r"^(?:-[A-Za-z]|--[A-Za-z][A-Za-z0-9-]*(?:=.*)?)$", re.DOTALL)
#: A short option with its value attached (``-k5``); text has spaces.
_ATTACHED_RE = re.compile(r"^-[A-Za-z][^\s-]\S*$")
#: An unknown option name safe to repeat in an error (no value, one short word).
_OPTION_NAME_RE = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]{0,39}$")

TEXT_HINT = "text that starts with '-' goes after `--`, e.g. {command} -- \"-x means ...\""


class FreeTextCommand(TyperCommand):
    """A command whose arguments are the user's text, leading dashes and all."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        options = _declared_options(self.get_params(ctx))
        return super().parse_args(ctx, text_after_options(args, options))


def _declared_options(params: Sequence[Any]) -> dict[str, bool]:
    """Option name -> whether it takes a value, for every option of a command."""
    declared: dict[str, bool] = {}
    for param in params:
        if getattr(param, "param_type_name", None) != "option":
            continue
        takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
        for name in (*param.opts, *param.secondary_opts):
            declared[name] = takes_value
    return declared


def text_after_options(args: Sequence[str], options: dict[str, bool]) -> list[str]:
    """*args* with every option first and every text argument after ``--``.

    Options keep their values (the next argument, or ``=value``), texts keep
    their order; an existing ``--`` makes everything after it text.
    """
    found: list[str] = []
    texts: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            texts.extend(args[i:])
            break
        if not arg.startswith("-") or arg == "-":
            texts.append(arg)
            continue
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        takes_value = options.get(name)
        if takes_value is not None:
            found.append(arg)
            if takes_value and "=" not in arg and i < len(args):
                found.append(args[i])  # the value, whatever it looks like
                i += 1
        elif _ATTACHED_RE.match(arg) and options.get(arg[:2]) is True:
            found.append(arg)  # a short option with its value attached: -k5
        elif _OPTION_LIKE_RE.match(arg):
            found.append(arg)  # a mistyped option: click says which
        else:
            texts.append(arg)
    return [*found, "--", *texts] if texts else found


def safe_usage_message(exc: Any) -> str:
    """A click usage error's message with nothing the user typed that could be private."""
    from memlane.store.redaction import redact

    message = str(getattr(exc, "message", "") or "")
    option = getattr(exc, "option_name", None)
    ctx = getattr(exc, "ctx", None)
    hint = ""
    # "-x" may be text meant for the command; "--word" is an option attempt.
    if isinstance(getattr(ctx, "command", None), FreeTextCommand) and not str(
        option or ""
    ).startswith("--"):
        hint = "; " + TEXT_HINT.format(command=getattr(ctx, "command_path", "memlane write"))
    if isinstance(option, str) and type(exc).__name__ == "NoSuchOption":
        if _OPTION_NAME_RE.match(option):
            close = getattr(exc, "possibilities", None)
            if close:
                message += f" (did you mean {', '.join(sorted(close))}?)"
                exc.possibilities = None  # said above, before the hint
            return redact(message).text + hint
        return (
            "an argument starting with '-' is not an option of this command "
            "(not repeated here: it may be private text)" + hint
        )
    if message.startswith("Got unexpected extra argument"):
        return (
            "too many arguments (not repeated here: they may be private text); "
            'quote text that has spaces, e.g. memlane write "two words"'
        )
    return redact(message).text
