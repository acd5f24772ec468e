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
