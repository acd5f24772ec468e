"""A chunk named by its hash, whole (16 hex characters) or by its first 8 or more.

Search shows every hit's 16-character chunk hash; typing its first 8
characters is enough wherever a unique match exists. A prefix several
chunks share is refused with the list of them, never guessed between.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import NotFoundError
from memlane.core.types import Chunk
from memlane.store.layout import list_markdown_files

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory

HASH_CHARS = 16
MIN_PREFIX_CHARS = 8
#: A refusal lists at most this many of the chunks a prefix matches.
LISTED_CANDIDATES = 10

_HEX_RE = re.compile(r"^[0-9a-f]+$")


def resolve_chunk(mem: ProjectMemory, given: str, *, min_chars: int = MIN_PREFIX_CHARS) -> Chunk:
    """The indexed chunk of the store that *given* names (a hash, or a unique
    prefix of at least *min_chars* characters)."""
    wanted = given.strip().lower()
    if not (min_chars <= len(wanted) <= HASH_CHARS and _HEX_RE.match(wanted)):
        raise NotFoundError(
            f"{given[: HASH_CHARS + 4]!r} is not a chunk hash",
            f"a chunk hash is {HASH_CHARS} hex characters, as printed by `memlane search`; "
            f"its first {MIN_PREFIX_CHARS} are enough when no other chunk starts with them",
        )
    if len(wanted) == HASH_CHARS:
        chunk = mem.index.get(wanted)
        if chunk is None:
            raise _no_chunk(mem, wanted)
        return chunk
    matches = sorted(
        {
            chunk_hash
            for path in list_markdown_files(mem.scope.store)
            for chunk_hash in mem.index.chunk_hashes(str(path))
            if chunk_hash.startswith(wanted)
        }
    )
    found = [c for c in (mem.index.get(h) for h in matches) if c is not None]
    if not found:
        raise _no_chunk(mem, wanted)
    if len(found) > 1:
        listed = "; ".join(_describe(c, mem.scope.store) for c in found[:LISTED_CANDIDATES])
        more = len(found) - LISTED_CANDIDATES
        raise NotFoundError(
            f"{len(found)} chunks start with {wanted}, so nothing was chosen: {listed}"
            + (f"; and {more} more" if more > 0 else ""),
            "give more characters of the hash, or all 16 as `memlane search` prints them",
        )
    return found[0]


def _no_chunk(mem: ProjectMemory, wanted: str) -> NotFoundError:
    return NotFoundError(
        f"no chunk {'starts with ' if len(wanted) < HASH_CHARS else ''}{wanted} in "
        f"collection {mem.collection}",
        "hashes change when a file is edited; run `memlane search` again for current ones",
    )


def _describe(chunk: Chunk, store: Path) -> str:
    source = Path(chunk.source)
    where = source.name if source.parent == store.expanduser().resolve() else chunk.source
    heading = f" {chunk.heading}" if chunk.heading else ""
    return f"{chunk.chunk_hash} ({where}:{chunk.start_line}-{chunk.end_line}{heading})"
