"""The notes index and the sessions index satisfy one protocol, HybridIndex,
and behave the same on it: the same calls, on the same three texts, give
the same answers (a Milvus backend will be held to this test too)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _builders import DIM, MODEL, make_chunk, src, unit_vector

from memlane.index.protocol import FileRecord, HybridIndex, IndexBackend, SearchFilters
from memlane.index.session_docs import BatchWrite, SessionDoc
from memlane.index.sqlite.notes import SqliteIndex
from memlane.index.sqlite.sessions import SessionStore

# (text, session): two items in session s1, one in s2.
ITEMS = [
    ("the deploy pipeline broke on the migration step", "s1"),
    ("the cache was warmed before the release", "s1"),
    ("release notes were written for the deploy", "s2"),
]


@dataclass
class Backend:
    """One index filled with ITEMS, and how to read its answers."""

    index: Any  # HybridIndex[...]: the hit and item types differ per backend
    keys: list[str]  # the key of each ITEMS entry, in order
    key_of_hit: Callable[[Any], str]
    text_of_item: Callable[[Any], str]


def _notes(tmp_path: Path) -> Backend:
    index = SqliteIndex(tmp_path / "notes.sqlite")
    source = src(tmp_path, "2026-01-01.md")
    chunks = [
        make_chunk(source, i, text, session=session) for i, (text, session) in enumerate(ITEMS)
    ]
    index.replace_file(FileRecord(source=source, mtime_ns=1, size=1, digest="d"), chunks, {})
    return Backend(
        index,
        [c.chunk.chunk_hash for c in chunks],
        lambda hit: hit.chunk.chunk_hash,
        lambda item: item.content,
    )


def _sessions(tmp_path: Path) -> Backend:
    store = SessionStore(tmp_path / "s.sessions.sqlite")
    docs = [
        SessionDoc(
            transcript=str(tmp_path / "t.jsonl"),
            entry_id=f"e{i}",
            session_id=session,
            role="user",
            timestamp=f"2026-01-01T10:0{i}:00Z",
            text=text,
            embed=True,
        )
        for i, (text, session) in enumerate(ITEMS)
    ]
    store.commit(BatchWrite(docs=docs))
    return Backend(store, [d.key for d in docs], lambda hit: hit.doc.key, lambda item: item.text)


@pytest.fixture(params=[_notes, _sessions], ids=["notes", "sessions"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    built: Backend = request.param(tmp_path)
    yield built
    built.index.close()


def test_both_indexes_satisfy_the_protocol(backend: Backend) -> None:
    assert isinstance(backend.index, HybridIndex)
    # Only the notes index keeps a collection in step with markdown files.
    assert isinstance(backend.index, IndexBackend) == isinstance(backend.index, SqliteIndex)


def test_model_binding(backend: Backend) -> None:
    index = backend.index
    assert index.ensure_model(MODEL, DIM) is False  # nothing bound yet: nothing dropped
    assert index.ensure_model(MODEL, DIM) is False  # the same model again
    assert index.stats()["model"] == MODEL
    assert index.ensure_model("another-model", DIM) is True  # old vector space dropped


def test_count_get_and_stats(backend: Backend) -> None:
    index = backend.index
    assert index.count() == len(ITEMS)
    for key, (text, _) in zip(backend.keys, ITEMS, strict=True):
        item = index.get(key)
        assert item is not None and backend.text_of_item(item) == text
    assert index.get("0" * 16) is None
    assert index.stats()["path"] == str(index.path)
    assert index.uri == f"sqlite://{index.path}"


def test_missing_vectors_are_filled_by_set_vectors(backend: Backend) -> None:
    index = backend.index
    index.ensure_model(MODEL, DIM)
    missing = dict(index.missing_vectors())
    assert set(missing) == set(backend.keys)
    assert all(text in missing[key] for key, (text, _) in zip(backend.keys, ITEMS, strict=True))
    assert len(index.missing_vectors(limit=1)) == 1
    vectors = {key: unit_vector(key) for key in backend.keys}
    index.set_vectors({**vectors, "f" * 16: unit_vector("unknown")})  # unknown key: ignored
    assert index.missing_vectors() == []
    assert index.count() == len(ITEMS)


def test_search_modes_scores_and_filters(backend: Backend) -> None:
    index = backend.index
    index.ensure_model(MODEL, DIM)
    mode, hits = index.search("migration", None, 5)
    assert mode == "lexical"
    # The notes index may also match a neighbour through its BM25 context
    # (the previous chunk of the same session): the item itself ranks first.
    assert backend.key_of_hit(hits[0]) == backend.keys[0]
    assert all(0.0 <= h.score <= 1.0 for h in hits)

    index.set_vectors({key: unit_vector(key) for key in backend.keys})
    mode, hits = index.search("deploy", unit_vector(backend.keys[2]), 5)
    assert mode == "hybrid"
    assert backend.key_of_hit(hits[0]) == backend.keys[2]  # the words and the vector agree
    assert all(0.0 <= h.score <= 1.0 for h in hits)

    mode, hits = index.search("deploy", None, 5, SearchFilters(session="s2"))
    assert [backend.key_of_hit(h) for h in hits] == [backend.keys[2]]
    assert index.search("deploy", None, 0) == ("lexical", [])
    with pytest.raises(ValueError):
        index.search("deploy", None, 5, lexical=False)


def test_a_vector_of_another_dimension_is_refused(backend: Backend) -> None:
    from memlane.index.protocol import DimensionMismatchError

    index = backend.index
    index.ensure_model(MODEL, DIM)
    index.set_vectors({backend.keys[0]: unit_vector("a")})
    with pytest.raises(DimensionMismatchError):
        index.set_vectors({backend.keys[1]: np.ones(DIM + 1, dtype=np.float32)})
