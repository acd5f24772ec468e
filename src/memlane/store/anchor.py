"""Session anchors: ``<!-- session:<id> turn:<entry id> transcript:<path> -->``.

Rendering is ``Anchor.render()`` (core.types). Parsing accepts everything
memsearch's expand accepts (``<!--\\s*session:(\\S+)\\s+turn:(\\S+)\\s+
transcript:(\\S+)\\s*-->``) with the same groups, plus two shapes other mesh
writers produce that memsearch's pattern misses, so recall still reaches the
transcript: extra ``key:value`` tags between turn and transcript (the Claude
Code plugin writes ``quality:0.7`` there), an empty turn, and a transcript
path containing spaces.
"""

from __future__ import annotations

import re

from memlane.core.types import Anchor

ANCHOR_RE = re.compile(
    r"<!--\s*session:(?P<session>\S+)"
    r"\s+turn:(?P<turn>\S*)"
    r"(?:\s+\w+:\S+)*?"  # optional tags; lazy so a plain anchor parses as memsearch does
    r"\s+transcript:(?P<transcript>[^\n]+?)"
    r"\s*-->"
)


def parse_anchor(text: str) -> Anchor | None:
    """The first anchor in *text*, or None."""
    match = ANCHOR_RE.search(text)
    if match is None:
        return None
    return Anchor(
        session=match.group("session"),
        turn=match.group("turn"),
        transcript=match.group("transcript"),
    )


def session_marker(session_id: str) -> re.Pattern[bytes]:
    """Bytes pattern for an anchor of exactly *session_id* (not a prefix of it)."""
    return re.compile(rb"session:" + re.escape(session_id.encode("utf-8")) + rb"\s")
