"""Explicit corrections in the markdown: ``<!-- supersedes:<content hash> -->``.

An entry that corrects an earlier one carries this comment with the earlier
entry's content hash (``sha256(content)[:16]``, DESIGN §4: stable across
re-indexing and a change of embedding model, unlike a chunk hash). It is an
HTML comment like the session anchor, so memsearch and any markdown reader
ignore it, and the index derives "which entry replaced which" from the files
alone (docs/adr/0028-current-facts-first.md).
"""

from __future__ import annotations

import re

SUPERSEDES_RE = re.compile(r"<!--\s*supersedes:(?P<hash>[0-9a-f]{16})\s*-->")
HEX16 = re.compile(r"[0-9a-f]{16}")


def supersedes_marker(old_content_hash: str) -> str:
    """The comment an entry carries when it replaces the entry with this content hash."""
    if not HEX16.fullmatch(old_content_hash):
        raise ValueError(f"not a content hash: {old_content_hash!r}")
    return f"<!-- supersedes:{old_content_hash} -->"


def superseded_hashes(content: str) -> list[str]:
    """The content hashes an entry's text says it replaces, in order."""
    return list(dict.fromkeys(m.group("hash") for m in SUPERSEDES_RE.finditer(content)))
