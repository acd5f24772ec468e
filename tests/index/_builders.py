"""Chunk, file and vector builders shared by the index tests (and workers)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memlane.core.types import Chunk, Kind, chunk_id_of, content_hash_of
from memlane.index.protocol import FileRecord, IndexedChunk

MODEL = "test-model"
DIM = 16


def make_chunk(
    source: str,
    index: int,
    text: str,
    *,
    heading: str | None = None,
    kind: Kind = "journal",
    date: str | None = None,
    session: str | None = None,
    model: str = MODEL,
) -> IndexedChunk:
    start = index * 10 + 1
    end = start + 5
    content_hash = content_hash_of(text)
    chunk = Chunk(
        content=text,
        source=source,
        heading=heading if heading is not None else f"{index:02d}:00",
        heading_level=3,
        start_line=start,
        end_line=end,
        content_hash=content_hash,
        chunk_hash=chunk_id_of(source, start, end, content_hash, model),
    )
    return IndexedChunk(chunk=chunk, kind=kind, date=date, session=session)


def make_file(
    source: str,
    texts: Sequence[str],
    *,
    kind: Kind = "journal",
    date: str | None = None,
    session: str | None = None,
    model: str = MODEL,
) -> tuple[FileRecord, list[IndexedChunk]]:
    chunks = [
        make_chunk(source, i, t, kind=kind, date=date, session=session, model=model)
        for i, t in enumerate(texts)
    ]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    return FileRecord(source=source, mtime_ns=len(texts), size=len(texts), digest=digest), chunks


def unit_vector(seed_text: str, dim: int = DIM) -> np.ndarray:
    """A deterministic random unit vector (the same in every process)."""
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def vectors_for(chunks: Sequence[IndexedChunk], dim: int = DIM) -> dict[str, np.ndarray]:
    return {c.chunk.chunk_hash: unit_vector(c.chunk.content, dim) for c in chunks}


def src(tmp: Path | str, name: str) -> str:
    return str(Path(tmp) / "memory" / name)


#: A store where one name is rare overall but in nearly every candidate of a
#: query naming it (index/legs/shared_words.py): short turns that repeat it,
#: one long turn about what the query asks (``NAMED_TURN``), other long
#: messages sharing the query's other word, and unrelated notes.
NAMED_QUERY = "Caroline speech"
NAMED_TURN = (
    "- Caroline: last week I gave a speech at the school about my own journey, how hard "
    "the first years were and who helped me through them, and afterwards the students "
    "stayed for an hour asking questions about what it took and what they could do"
)


def named_corpus(tmp: Path | str) -> list[tuple[str, list[str]]]:
    """(source, chunk texts) per file of that store."""
    thanks = ["- Caroline: thanks, Caroline! Bye, Caroline!"] * 18
    others = [
        f"- the release manager gave a long speech number {i} at the quarterly planning "
        "meeting about the roadmap, the hiring plan and the budget for the next year"
        for i in range(60)
    ]
    notes = [
        f"- build {i} passed on the arm runner once the dependency cache was warm again"
        for i in range(400)
    ]
    return [
        (src(tmp, "turns.md"), [*thanks, NAMED_TURN]),
        (src(tmp, "meetings.md"), others),
        *((src(tmp, f"notes-{j}.md"), notes[j * 100 : (j + 1) * 100]) for j in range(4)),
    ]
