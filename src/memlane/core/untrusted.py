"""Showing and checking text memlane did not write: a store command's answer,
a path an agent passes as a tool argument.

Such text can be anything: megabytes long, or holding a newline, an escape
sequence or a NUL. An error message that quotes it whole floods the
terminal (a 5 MB answer made a 5 MB error), and one that prints it raw can
hide what is wrong (a newline splits the one line into two, an escape
sequence rewrites the screen). ``excerpt`` quotes a bounded, escaped
prefix; ``path_problem`` says what makes a string unusable as a path
before the operating system answers with an exception that names nothing
(``ValueError: embedded null byte``) or a misleading one (a name longer
than the file system allows fails as if the directory were not writable).
"""

from __future__ import annotations

import os
import unicodedata

#: How much of a foreign string an error quotes.
EXCERPT_CHARS = 200  # a long path still shows whole
#: Linux's PATH_MAX (4096, counting the final NUL) and NAME_MAX: the most a
#: path and one of its components may hold, in bytes.
PATH_MAX_BYTES = 4095
NAME_MAX_BYTES = 255


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` quoted with every control or invisible character escaped
    (``repr``), cut to ``limit`` characters with its full length said."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def control_character(text: str) -> tuple[int, str] | None:
    """(position, escaped form) of the first control character in ``text``."""
    for position, char in enumerate(text):
        if unicodedata.category(char) == "Cc":
            return position, repr(char)[1:-1]
    return None


def path_problem(text: str, *, control_characters: bool = False) -> str | None:
    """Why ``text`` cannot be a path memlane uses, or None when it can.

    The answer is a phrase ("holds a control character ...") to put after
    the name of what gave the path. A NUL, text the file system cannot
    encode and a path longer than the system takes are always refused;
    other control characters only without ``control_characters`` (a store
    command's answer: a newline there is a second line, not a name).
    """
    if "\0" in text:  # no path can hold one: the system call ends the name there
        return f"holds a NUL byte (at position {text.index(chr(0)) + 1})"
    found = None if control_characters else control_character(text)
    if found is not None:
        position, char = found
        return f"holds a control character ({char} at position {position + 1})"
    if not _encodable(text):
        return "is not valid text for a file name"
    size = len(os.fsencode(text))
    if size > PATH_MAX_BYTES:
        return f"is {size:,} bytes long, more than a path may be ({PATH_MAX_BYTES:,})"
    for part in text.split(os.sep):
        part_size = len(os.fsencode(part))
        if part_size > NAME_MAX_BYTES:
            return (
                f"has a component of {part_size:,} bytes, more than a file name may be "
                f"({NAME_MAX_BYTES})"
            )
    return None


def _encodable(text: str) -> bool:
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True
