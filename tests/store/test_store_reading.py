"""Anchors, section expansion, strict reading and the store layout.

Tests that compare with the real memsearch package are marked ``parity``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memsearch.chunker import chunk_markdown as ms_chunk_markdown
from memsearch.cli import _extract_section as ms_extract_section
from memsearch.io import read_utf8_text_replace
from memsearch.scanner import scan_paths

from memlane.core.errors import StoreError
from memlane.core.types import Anchor
from memlane.store.anchor import ANCHOR_RE, parse_anchor
from memlane.store.chunker import chunk_markdown
from memlane.store.layout import (
    date_of,
    entry_time_of,
    kind_of,
    list_markdown_files,
    scan_markdown_files,
)
from memlane.store.section import extract_section, read_markdown, read_markdown_checked, split_lines

MS_ANCHOR = re.compile(r"<!--\s*session:(\S+)\s+turn:(\S+)\s+transcript:(\S+)\s*-->")
FAST = settings(max_examples=80, deadline=None)

# --- anchors ------------------------------------------------------------------

TOKEN = st.text(
    st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=20
).filter(lambda t: "-->" not in t and not re.search(r"\s", t))


@FAST
@given(TOKEN, TOKEN, TOKEN, st.text(max_size=30).filter(lambda t: "<!--" not in t), st.text())
def test_anchor_parse_agrees_with_memsearch(
    session: str, turn: str, transcript: str, before: str, after: str
) -> None:
    rendered = Anchor(session, turn, transcript).render()
    text = before + rendered + after
    theirs = MS_ANCHOR.search(text)
    assert theirs is not None
    assert parse_anchor(text) == Anchor(*theirs.groups())


def test_anchor_examples() -> None:
    plain = "<!-- session:3f2c turn:ab12cd34 transcript:/home/you/s.jsonl -->"
    assert parse_anchor(f"### 10:00\n{plain}\n- x") == Anchor(
        "3f2c", "ab12cd34", "/home/you/s.jsonl"
    )
    assert parse_anchor("no anchor here") is None
    first, second = plain, plain.replace("3f2c", "9999")
    assert parse_anchor(f"{first}\n{second}") == parse_anchor(first)  # first anchor wins
    # Shapes other mesh writers produce that memsearch's own pattern misses:
    tagged = "<!-- session:s1 turn:u-1 quality:0.72 transcript:/t/s1.jsonl -->"
    assert MS_ANCHOR.search(tagged) is None
    assert parse_anchor(tagged) == Anchor("s1", "u-1", "/t/s1.jsonl")
    assert parse_anchor("<!-- session:s1 turn: transcript:/t/a.jsonl -->") == Anchor(
        "s1", "", "/t/a.jsonl"
    )
    spaced = "<!-- session:s1 turn:t transcript:/Users/me/My Sessions/a.jsonl -->"
    assert parse_anchor(spaced) == Anchor("s1", "t", "/Users/me/My Sessions/a.jsonl")
    assert ANCHOR_RE.pattern  # exported for callers that scan whole files


# --- split_lines and extract_section -----------------------------------------

LINE = st.one_of(
    st.sampled_from(["", "text", "- bullet", "<!-- c -->", "  indented"]),
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), st.sampled_from(["A", "B c"])),
)


@FAST
@given(st.lists(LINE, max_size=30), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_split_lines_equals_splitlines_for_lf_and_crlf(
    lines: list[str], newline: str, trailing: bool
) -> None:
    text = newline.join(lines) + (newline if trailing else "")
    assert split_lines(text) == text.splitlines()


@pytest.mark.parity
@FAST
@given(st.lists(LINE, min_size=1, max_size=30), st.sampled_from(["\n", "\r\n"]))
def test_extract_section_matches_memsearch_for_every_chunk(lines: list[str], newline: str) -> None:
    text = newline.join(lines)
    all_lines = split_lines(text)
    for chunk in ms_chunk_markdown(text, "/s.md"):
        if chunk.heading_level == 0:
            continue  # the documented departure, tested below
        args = (chunk.start_line, chunk.heading_level)
        assert extract_section(all_lines, *args) == ms_extract_section(text.splitlines(), *args)


def test_extract_section_widens_to_parent_heading_and_stops_at_sibling() -> None:
    lines = [
        "# Day",
        "## Session 09:00",
        "### 09:00",
        "- a",
        "#### detail",
        "- b",
        "### 09:30",
        "- c",
    ]
    assert extract_section(lines, 3, 3) == ("### 09:00\n- a\n#### detail\n- b", 3, 6)
    assert extract_section(lines, 6, 4) == ("#### detail\n- b", 5, 6)
    assert extract_section(lines, 2, 2) == ("\n".join(lines[1:]), 2, 8)


PREAMBLE = ["intro", "more intro", "# Title", "body"]


def test_preamble_section_ends_at_first_heading() -> None:
    assert extract_section(PREAMBLE, 1, 0) == ("intro\nmore intro", 1, 2)


@pytest.mark.parity
def test_memsearch_runs_a_preamble_section_on_to_the_end() -> None:
    assert ms_extract_section(PREAMBLE, 1, 0)[2] == 4  # the documented departure


def test_extract_section_tolerates_a_shrunken_file() -> None:
    assert extract_section(["### 10:00", "- a"], 9, 3) == ("### 10:00\n- a", 1, 2)


# --- read_markdown ------------------------------------------------------------


BOM_CRLF = "\ufeff# 2026-08-13\r\n\r\n### 10:00\r\n- moved to Redis\r\n".encode()


def test_read_keeps_crlf_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "2026-08-13.md"
    path.write_bytes(BOM_CRLF)
    text = read_markdown(path)
    assert text == BOM_CRLF.decode("utf-8")
    # The BOM is kept (as memsearch keeps it), so the title is no heading but preamble text.
    chunks = chunk_markdown(text, str(path), "m")
    assert [c.content for c in chunks] == ["\ufeff# 2026-08-13", "### 10:00\r\n- moved to Redis"]


@pytest.mark.parity
def test_read_keeps_crlf_and_bom_like_memsearch_indexer(tmp_path: Path) -> None:
    path = tmp_path / "2026-08-13.md"
    path.write_bytes(BOM_CRLF)
    text = read_markdown(path)
    assert text == read_utf8_text_replace(path)
    ours = [
        (c.content, c.start_line, c.end_line, c.content_hash)
        for c in chunk_markdown(text, str(path), "m")
    ]
    theirs = [
        (c.content, c.start_line, c.end_line, c.content_hash)
        for c in ms_chunk_markdown(text, str(path))
    ]
    assert ours == theirs


def test_read_errors_are_one_line_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not found") as missing:
        read_markdown(tmp_path / "nope.md")
    assert "nope.md" in str(missing.value) and "\n" not in str(missing.value)

    with pytest.raises(StoreError, match=r"found a directory"):
        read_markdown(tmp_path)


def test_a_line_that_is_not_utf8_reads_empty_and_is_reported(tmp_path: Path) -> None:
    # ADR 0002: the damaged line is left out, the file's other lines are not.
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# ok\n- caf\xe9\n- fine\n")
    assert read_markdown(bad) == "# ok\n\n- fine\n"
    checked = read_markdown_checked(bad)
    assert [(d.line, d.reason) for d in checked.damaged] == [
        (2, "not valid UTF-8 (byte 0xe9 at offset 10)")
    ]
    assert checked.damaged[0].where == f"{bad}:2"


def test_permission_denied_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "locked.md"
    path.write_text("x", encoding="utf-8")
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads anything: simulate the refusal (read_markdown opens with os.open)
        real_open = os.open

        def refuse(name: Any, *args: Any, **kwargs: Any) -> int:
            if Path(name) == path:
                raise PermissionError(13, "Permission denied", str(name))
            return real_open(name, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(StoreError, match=r"permission denied reading .*locked\.md"):
        read_markdown(path)


# --- layout -------------------------------------------------------------------


def make_store(root: Path) -> Path:
    store = root / "proj" / ".memsearch" / "memory"
    (store / "topics").mkdir(parents=True)
    (store / ".hidden").mkdir()
    for rel in [
        "2026-08-13.md",
        "2026-08-14.md",
        "MEMORY.md",
        "notes.markdown",
        "UPPER.MD",
        "topics/redis.md",
        "topics/readme.txt",
        ".draft.md",
        ".hidden/secret.md",
    ]:
        (store / rel).write_text("# x\nbody\n", encoding="utf-8")
    return store


@pytest.mark.parity
def test_listing_matches_memsearch_scanner(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    # The one difference from memsearch: the store's MEMORY.md is not listed.
    memory_index = store.resolve() / "MEMORY.md"
    assert list_markdown_files(store) == [
        f.path for f in scan_paths([store]) if f.path != memory_index
    ]


def test_listing_of_a_store(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    ours = list_markdown_files(store)
    assert [p.relative_to(store.resolve()).as_posix() for p in ours] == [
        "2026-08-13.md",
        "2026-08-14.md",
        "UPPER.MD",
        "notes.markdown",
        "topics/redis.md",
    ]
    assert all(p.is_absolute() for p in ours)


def test_listing_skips_every_link_and_reports_it(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "leak.md").write_text("secret", encoding="utf-8")
    (store / "leak.md").symlink_to(outside / "leak.md")
    (store / "linked-dir").symlink_to(outside, target_is_directory=True)
    (store / "broken.md").symlink_to(tmp_path / "missing.md")
    (store / "alias.md").symlink_to(store / "2026-08-13.md")
    (store / "topics" / "inside-link.md").symlink_to(store / ".hidden" / "secret.md")
    names = [p.relative_to(store.resolve()).as_posix() for p in list_markdown_files(store)]
    assert "leak.md" not in names and "broken.md" not in names
    assert not any(n.startswith("linked-dir") for n in names)
    assert "alias.md" not in names and "2026-08-13.md" in names  # the real file, once
    # A link is never followed, even one pointing inside the store; the scan reports each.
    assert "topics/inside-link.md" not in names
    scan = scan_markdown_files(store)
    linked = {p.relative_to(store.resolve()).as_posix() for p in scan.links}
    assert linked == {"leak.md", "linked-dir", "broken.md", "alias.md", "topics/inside-link.md"}


def test_listing_of_missing_store_is_empty(tmp_path: Path) -> None:
    assert list_markdown_files(tmp_path / "absent") == []


def test_kind_date_and_entry_time(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert kind_of(store / "MEMORY.md", store) == "topic"
    assert kind_of(store / "topics" / "redis.md", store) == "topic"
    assert kind_of(store.resolve() / "topics" / "redis.md", store) == "topic"
    assert kind_of(store / "2026-08-13.md", store) == "journal"
    assert kind_of(store / "topics.md", store) == "journal"
    assert kind_of(tmp_path / "other.md", store) == "journal"

    assert date_of(Path("/s/2026-08-13.md")) == "2026-08-13"
    assert date_of(Path("2026-02-30.md")) is None
    assert date_of(Path("2026-08-13.markdown")) is None
    assert date_of(Path("notes-2026-08-13.md")) is None

    assert entry_time_of("### 14:05") == "14:05"
    assert entry_time_of("14:05") == "14:05"
    assert entry_time_of("## Session 14:05") is None
    assert entry_time_of("### 25:00") is None
    assert entry_time_of("#### 14:05") is None
