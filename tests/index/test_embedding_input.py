"""The embedder's input: a chunk's cleaned text plus the previous chunk as context."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from _builders import make_file, src

from memlane.core.settings import EmbeddingSettings
from memlane.core.types import (
    EMBED_CONTEXT_CHARS,
    EMBED_INPUT_VERSION,
    contextual_embedding_text,
    embedding_text_of,
)
from memlane.embed.factory import vector_space
from memlane.engine.indexer import embedding_inputs
from memlane.index.sqlite import SqliteIndex

FIRST = "### 10:00\n<!-- session:s1 turn:t1 transcript:none -->\n- we adopted a cat last week"
SECOND = "### 10:01\n<!-- session:s1 turn:t2 transcript:none -->\n- her name is Miso"


def test_context_follows_the_text_and_drops_headings_and_comments() -> None:
    text = contextual_embedding_text(SECOND, FIRST)
    assert text == "### 10:01\n\n- her name is Miso\n\n- we adopted a cat last week"
    assert contextual_embedding_text(SECOND, None) == embedding_text_of(SECOND)
    assert contextual_embedding_text(SECOND, "### 09:00\n<!-- x -->") == embedding_text_of(SECOND)
    long = contextual_embedding_text("- a", "- " + "b" * 1000)
    assert len(long) <= len("- a\n\n") + EMBED_CONTEXT_CHARS


def test_indexer_and_index_agree_and_respect_session_boundaries(tmp_path: Path) -> None:
    record, chunks = make_file(src(tmp_path, "d.md"), [FIRST, SECOND, "- other session"])
    chunks = [
        dataclasses.replace(c, session=s) for c, s in zip(chunks, ["s1", "s1", "s2"], strict=True)
    ]
    inputs = embedding_inputs(chunks)
    hashes = [c.chunk.chunk_hash for c in chunks]
    assert inputs[hashes[0]] == embedding_text_of(FIRST)
    assert inputs[hashes[1]] == contextual_embedding_text(SECOND, FIRST)
    assert inputs[hashes[2]] == "- other session"  # another session: no context
    with SqliteIndex(tmp_path / "i.sqlite") as index:
        index.replace_file(record, chunks, {})
        assert dict(index.missing_vectors()) == inputs


def test_input_version_is_part_of_the_vector_space() -> None:
    assert f"input:{EMBED_INPUT_VERSION}" in vector_space(EmbeddingSettings())
    assert f"input:{EMBED_INPUT_VERSION}" in vector_space(
        EmbeddingSettings(provider="openai", base_url="http://127.0.0.1:1/v1")
    )


def test_bm25_matches_the_previous_entry_at_a_lower_weight(tmp_path: Path) -> None:
    texts = [
        "### 10:00\n<!-- session:s1 turn:t1 transcript:none -->\n- did you see the aurora in Tromso",
        "### 10:01\n<!-- session:s1 turn:t2 transcript:none -->\n- yes, it was magical",
        "### 10:02\n<!-- session:s2 turn:t3 transcript:none -->\n- unrelated: lunch was good",
    ]
    record, chunks = make_file(src(tmp_path, "d.md"), texts)
    chunks = [
        dataclasses.replace(c, session=s) for c, s in zip(chunks, ["s1", "s1", "s2"], strict=True)
    ]
    with SqliteIndex(tmp_path / "i.sqlite") as index:
        index.replace_file(record, chunks, {})
        _, hits = index.search("aurora Tromso", None, 5)
        # the entry's own words first, then the reply that follows it
        assert [h.chunk.chunk_hash for h in hits] == [c.chunk.chunk_hash for c in chunks[:2]]
        assert "aurora" not in hits[1].chunk.content  # what a hit returns is unchanged
        _, other = index.search("magical", None, 5)
        # context never crosses a session: "magical" does not reach t3
        assert [h.chunk.chunk_hash for h in other] == [chunks[1].chunk.chunk_hash]
