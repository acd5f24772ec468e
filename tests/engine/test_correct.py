"""Correcting an entry in place: the forget machinery with a replacement,
so the old text leaves the store and the index, and the next search finds
the new text."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memlane.core.errors import ConflictError, StoreError
from memlane.engine.journal.forget_preview import preview_forget
from memlane.engine.journal.maintenance import correct
from memlane.engine.project import Memory
from memlane.store.daily import corrected_entry

OLD = "zanzibarquokka"  # one token that the porter stemmer leaves alone
DAY = "2026-03-14"


def at(hhmm: str) -> datetime:
    hour, minute = map(int, hhmm.split(":"))
    return datetime(2026, 3, 14, hour, minute)


def holding(roots: list[Path], needle: str) -> list[str]:
    """Files whose raw bytes hold *needle* (any case), -wal/-shm included."""
    return [
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and needle.lower().encode() in p.read_bytes().lower()
    ]


def _hash_of(memory: Memory, words: str) -> str:
    hits = memory.search(words, 10, min_score=0.0).hits
    return next(h.chunk_hash for h in hits if words in h.content)


def test_a_corrected_entry_keeps_its_heading_and_anchor_and_loses_its_old_text(
    memory: Memory, isolated_home: Path, project: Path
) -> None:
    memory.write("kept one: the cache lives in redis", now=at("09:00"))
    memory.write(f"the staging database is {OLD}\nsecond line of it", now=at("09:05"))
    memory.write("kept two: payments use stripe", now=at("09:10"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_text(encoding="utf-8")
    memory.search(OLD)  # indexed: the old text is in the index file too
    assert holding([isolated_home], OLD)
    removed = correct(
        memory,
        "the staging database is pg-staging-2 (token ghp_" + "a" * 36 + ")",
        chunk_hash=_hash_of(memory, OLD),
    )
    assert OLD in removed.markdown
    after = path.read_text(encoding="utf-8")
    block = before.split("### 09:05", 1)[1].split("###", 1)[0]
    anchor = next(line for line in block.splitlines() if line.startswith("<!--"))
    assert f"### 09:05\n{anchor}\n- the staging database is pg-staging-2" in after
    assert "ghp_aaaa" not in after  # redacted as a write is
    assert "kept one" in after and "kept two" in after
    assert after.count("###") == before.count("###")
    assert holding([isolated_home, memory.scope.store, project], OLD) == []
    hits = memory.search("staging database", 10, min_score=0.0).hits
    assert "pg-staging-2" in hits[0].content


def test_a_correction_confirmed_against_an_older_file_changes_nothing(memory: Memory) -> None:
    memory.write(f"the staging database is {OLD}", now=at("09:05"))
    memory.sync()
    shown = preview_forget(memory, date=DAY, time="09:05")
    path = memory.scope.store / f"{DAY}.md"
    path.write_text(path.read_text(encoding="utf-8").replace(OLD, OLD + "x"), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(ConflictError):
        correct(memory, "something else", date=DAY, time="09:05", expect=shown.fingerprint())
    assert path.read_bytes() == before


def test_an_empty_correction_is_refused_before_anything_changes(memory: Memory) -> None:
    memory.write(f"the staging database is {OLD}", now=at("09:05"))
    path = memory.scope.store / f"{DAY}.md"
    before = path.read_bytes()
    with pytest.raises(StoreError, match="corrected text is empty"):
        correct(memory, "  \n ", date=DAY, time="09:05")
    assert path.read_bytes() == before


def test_corrected_entry_replaces_only_the_text() -> None:
    block = "\n### 09:05\n<!-- session:s turn:t transcript:none -->\n- old\n- older\n\n"
    assert corrected_entry(block, "new\n- newer") == (
        "\n### 09:05\n<!-- session:s turn:t transcript:none -->\n- new\n- newer\n\n"
    )
    marked = "### 10:00\n- old\n<!-- supersedes:0123456789abcdef -->\n"
    assert corrected_entry(marked, "new") == (
        "### 10:00\n<!-- supersedes:0123456789abcdef -->\n- new\n"
    )
