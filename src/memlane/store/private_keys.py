"""Private key blocks (PEM, PKCS#1/#8, PuTTY) in text: where each one starts and ends.

A key is cut from its BEGIN header to its END line; a key whose END line is
missing (pasted half, or inside a JSON string with literal ``\\n``) is cut
as far as its body lines go, so no part of it is ever kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Cut after the header's own dashes; the END line may use any label (PKCS#8 vs PKCS#1).
_PEM_END_RE = re.compile(
    r"-{2,}[ \t]*END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?[ \t]*-{2,}|\bBEGIN [A-Z0-9 ]*PRIVATE KEY"
)
ANY_PEM_KEY_HEADER_RE = re.compile(r"BEGIN [A-Z0-9 ]*PRIVATE KEY")
_PEM_HEADER_TAIL_RE = re.compile(r"[ \t]*-*")
_NEWLINE_RE = re.compile(r"\r?\n")
# What the rest of an unclosed key looks like: base64 (possibly with literal \n escapes,
# as in a JSON service-account file) or RFC 1421 / PuTTY "Name: value" header lines.
_PEM_REST_OF_LINE_RE = re.compile(r"(?:[A-Za-z0-9+/=]|\\n)*")
_PEM_BODY_LINE_RE = re.compile(
    r"[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z][A-Za-z0-9-]*:[^\r\n]*)[ \t]*(?=\r?\n|\Z)"
)


def private_key_blocks(
    text: str, headers: tuple[re.Pattern[str], ...]
) -> Iterator[tuple[int, int]]:
    """(start, end) of every private key block a header of *headers* opens, dashes included."""
    for header in headers:
        for match in header.finditer(text):
            start = match.start()
            while start > 0 and text[start - 1] == "-":
                start -= 1
            yield start, _private_key_end(text, match.end())


def _private_key_end(text: str, header_end: int) -> int:
    end = _PEM_END_RE.search(text, header_end)
    if end is not None and not end.group().startswith("BEGIN"):
        return end.end()
    pos = _PEM_HEADER_TAIL_RE.match(text, header_end).end()  # type: ignore[union-attr]
    pos = _PEM_REST_OF_LINE_RE.match(text, pos).end()  # type: ignore[union-attr]
    while (newline := _NEWLINE_RE.match(text, pos)) is not None and (
        line := _PEM_BODY_LINE_RE.match(text, newline.end())
    ) is not None:
        pos = line.end()  # the line break after the key stays in the text
    return pos
