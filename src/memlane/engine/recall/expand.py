"""L2 recall (``expand``: a chunk's whole heading section) and ``similar`` (more like a chunk)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.core.errors import NotFoundError, StoreError
from memlane.core.types import Hit, SearchResult, Section
from memlane.engine.lock_waits import bounded_read
from memlane.engine.shared.request import check_k

if TYPE_CHECKING:
    from memlane.core.scope import Scope
    from memlane.core.types import Chunk
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.index.protocol import HybridIndex, ScoredChunk

_CHUNK_HASH_RE = re.compile(r"^[0-9a-f]{16}$")


@bounded_read  # a lock another process holds is waited for briefly, then reported
def similar(memory: ProjectMemory, chunk_hash: str, k: int = 10) -> SearchResult:
    """More like this chunk: nearest stored vectors, the chunk itself excluded."""
    wanted = chunk_hash.strip().lower()
    check_k(k)
    index = memory.index
    chunk = index.get(wanted) if _CHUNK_HASH_RE.match(wanted) else None
    if chunk is None:
        raise NotFoundError(
            f"no chunk {chunk_hash!r} in collection {memory.collection}",
            "pass a chunk hash from memlane search (or a session message id)",
        )
    vector = index.vector_of(wanted)
    notices: list[str] = []
    if vector is None:
        # Not embedded (no working model when it was indexed): its own
        # words are the next best description of it.
        notices.append("this chunk has no vector yet; showing lexical neighbours")
        mode, scored = index.search(chunk.content, None, k + 1)
    else:
        mode, scored = index.search("", vector, k + 1, lexical=False)
    hits = [Hit.of(s.chunk, s.score) for s in scored if s.chunk.chunk_hash != wanted][:k]
    return SearchResult(query=chunk.content[:200], mode=mode, hits=hits, notices=notices)


@bounded_read
def expand(memory: ProjectMemory, chunk_hash: str) -> Section:
    """L2 recall: the whole heading section a chunk came from, with its anchor."""
    return expand_section(memory.index, memory.scope, chunk_hash, memory.notices)


def expand_section(
    index: HybridIndex[ScoredChunk, Chunk], scope: Scope, chunk_hash: str, notices: list[str]
) -> Section:
    """``expand`` over a given index and scope (a cross-repo hit uses another project's)."""
    from memlane.store.anchor import parse_anchor
    from memlane.store.section import extract_section, read_markdown, split_lines

    wanted = chunk_hash.strip().lower()
    if not _CHUNK_HASH_RE.match(wanted):
        raise NotFoundError(
            f"{chunk_hash!r} is not a chunk hash",
            "a chunk hash is 16 hex characters, as printed by `memlane search`",
        )
    chunk = index.get(wanted)
    if chunk is None:
        raise NotFoundError(
            f"no chunk {wanted} in collection {scope.collection}",
            "hashes change when a file is edited; run `memlane search` again for current ones",
        )
    try:
        text = read_markdown(Path(chunk.source), scope.store)
    except StoreError as exc:
        raise NotFoundError(
            f"chunk {wanted} came from {chunk.source}, which cannot be read: {exc.message}",
            "run `memlane index` to bring the index in line with the store",
        ) from None
    lines = split_lines(text)
    content, start, end = extract_section(lines, chunk.start_line, chunk.heading_level)
    if chunk.start_line > len(lines):
        notices.append(f"{chunk.source} is shorter than when it was indexed; run `memlane index`")
    return Section(
        chunk_hash=wanted,
        source=chunk.source,
        heading=chunk.heading,
        start_line=start,
        end_line=end,
        content=content,
        anchor=parse_anchor(content),
    )
