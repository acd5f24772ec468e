"""The embedder's input (a note as it stands) and the BM25 context column."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from _builders import make_file, src, unit_vector

from memlane.core.settings import EmbeddingSettings
from memlane.core.types import (
    EMBED_CONTEXT_CHARS,
    EMBED_INPUT_VERSION,
    context_of,
    embedding_text_of,
)
from memlane.embed.factory import vector_space
from memlane.engine.journal.indexer import embedding_inputs
from memlane.index.sqlite.notes import SqliteIndex

FIRST = "### 10:00\n<!-- session:s1 turn:t1 transcript:none -->\n- we adopted a cat last week"
SECOND = "### 10:01\n<!-- session:s1 turn:t2 transcript:none -->\n- her name is Miso"


def test_context_drops_headings_and_comments_and_is_capped() -> None:
    assert context_of(FIRST) == "- we adopted a cat last week"
    assert context_of("### 09:00\n<!-- x -->") == ""
    assert len(context_of("- " + "b" * 1000)) <= EMBED_CONTEXT_CHARS


def test_notes_are_embedded_as_they_stand(tmp_path: Path) -> None:
    """No neighbour's text in a note's embedding input: it would give the note
    its neighbour's topic. The indexer and the index's backlog agree."""
    record, chunks = make_file(src(tmp_path, "d.md"), [FIRST, SECOND, "- other session"])
    chunks = [
        dataclasses.replace(c, session=s) for c, s in zip(chunks, ["s1", "s1", "s2"], strict=True)
    ]
    inputs = embedding_inputs(chunks)
    assert list(inputs.values()) == [
        embedding_text_of(FIRST),
        "### 10:01\n\n- her name is Miso",
        "- other session",
    ]
    with SqliteIndex(tmp_path / "i.sqlite") as index:
        index.replace_file(record, chunks, {})
        assert dict(index.missing_vectors()) == inputs


def test_a_changed_neighbour_keeps_the_vector_and_moves_the_bm25_context(tmp_path: Path) -> None:
    path = src(tmp_path, "d.md")
    record, chunks = make_file(path, [FIRST, SECOND])
    chunks = [dataclasses.replace(c, session="s1") for c in chunks]
    second = chunks[1].chunk.chunk_hash
    vector = unit_vector("miso")
    with SqliteIndex(tmp_path / "i.sqlite") as index:
        index.replace_file(record, chunks, {second: vector})
        edited = FIRST.replace("a cat", "a tabby kitten")
        record2, chunks2 = make_file(path, [edited, SECOND])
        chunks2 = [dataclasses.replace(c, session="s1") for c in chunks2]
        assert chunks2[1].chunk.chunk_hash == second  # the reply itself did not change
        index.replace_file(record2, chunks2, {})  # nothing embedded again
        assert index.chunk_contexts(path)[second] == "- we adopted a tabby kitten last week"
        assert second not in dict(index.missing_vectors())  # its vector came along
        _, hits = index.search("kitten", unit_vector("kitten"), 5)
        assert second in [h.chunk.chunk_hash for h in hits]  # found through the new context


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
