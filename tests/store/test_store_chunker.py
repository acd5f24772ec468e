"""The chunker against the real memsearch 0.4.23 chunker.

Parity is checked on generated ordinary markdown (the condition defined in
memlane.store.chunker's docstring); on pathological markdown the invariants
memsearch breaks are checked instead. Tests that compare with memsearch's
output are marked ``parity``; the invariants (which borrow memsearch's
definition of meaningful content) stand on their own in the fast lane.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from memsearch.chunker import _has_meaningful_content as ms_meaningful
from memsearch.chunker import chunk_markdown as ms_chunk_markdown
from memsearch.chunker import compute_chunk_id

from memlane.core.types import Chunk
from memlane.store.chunker import MAX_CHUNK_SIZE, OVERLAP_LINES, chunk_markdown, is_ordinary

SOURCE = "/home/dev/proj/.memsearch/memory/2026-08-13.md"
MODEL = "all-MiniLM-L6-v2"
HEADING = re.compile(r"^(#{1,6})\s+(.+)$")

Row = tuple[str, str, int, int, int, str, str]

FAST = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def memsearch_rows(text: str, **kwargs: Any) -> list[Row]:
    return [
        (
            c.content,
            c.heading,
            c.heading_level,
            c.start_line,
            c.end_line,
            c.content_hash,
            compute_chunk_id(c.source, c.start_line, c.end_line, c.content_hash, MODEL),
        )
        for c in ms_chunk_markdown(text, SOURCE, **kwargs)
    ]


def our_rows(chunks: list[Chunk]) -> list[Row]:
    return [
        (
            c.content,
            c.heading,
            c.heading_level,
            c.start_line,
            c.end_line,
            c.content_hash,
            c.chunk_hash,
        )
        for c in chunks
    ]


def sections(text: str) -> list[tuple[int, int, str, int]]:
    """Independent re-statement of the section rule: (start, end, heading, level), 0-based."""
    lines = text.split("\n")
    marks = [(i, m) for i, line in enumerate(lines) if (m := HEADING.match(line))]
    out: list[tuple[int, int, str, int]] = []
    if not marks or marks[0][0] > 0:
        out.append((0, marks[0][0] if marks else len(lines), "", 0))
    for n, (i, m) in enumerate(marks):
        end = marks[n + 1][0] if n + 1 < len(marks) else len(lines)
        out.append((i, end, m.group(2).strip(), len(m.group(1))))
    return out


def in_section(rows: list[Row], start: int, end: int) -> list[Row]:
    return [r for r in rows if start < r[3] <= end]


def covered(needle: str, haystacks: list[str]) -> bool:
    """Can *needle* (whitespace ignored) be tiled by substrings of the haystacks?"""
    squeeze = re.compile(r"\s+")
    target = squeeze.sub("", needle)
    pool = "\x00".join(squeeze.sub("", h) for h in haystacks)
    pos = 0
    while pos < len(target):
        lo, hi = 0, len(target) - pos  # longest k with target[pos:pos+k] in pool
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if target[pos : pos + mid] in pool:
                lo = mid
            else:
                hi = mid - 1
        if lo == 0:
            return False
        pos += lo
    return True


def assert_invariants(text: str, chunks: list[Chunk], max_size: int = MAX_CHUNK_SIZE) -> None:
    lines = text.split("\n")
    rows = our_rows(chunks)
    for start, end, heading, level in sections(text):
        mine = in_section(rows, start, end)
        body = "\n".join(lines[start:end]).strip()
        if not body or not ms_meaningful(body):
            assert mine == [], "a dropped section produced chunks"
            continue
        assert mine, f"kept section at line {start + 1} produced no chunk"
        contents = [r[0] for r in mine]
        assert len(set(contents)) == len(contents), "two chunks of one section share content"
        for content, h, lvl, first, last, _, _ in mine:
            assert ms_meaningful(content), f"chunk without meaningful content: {content[:80]!r}"
            assert (h, lvl) == (heading, level)
            assert start + 1 <= first <= last <= end
        for line in lines[start:end]:
            if not line.strip():
                continue
            if len(line) <= max_size:
                assert any(line.strip() in c for c in contents), f"line lost: {line[:60]!r}"
            else:
                assert covered(line, contents), f"long line not covered: {line[:60]!r}"
    assert len(rows) == len(chunks)


# --- generators ---------------------------------------------------------------

ASCII_WORDS = [
    "redis", "cache", "ttl", "the", "agent", "moved", "deploy", "user", "asked",
    "e.g.", "v1.2.3", "path/to/file.py", "user@example.com", "done.", "why?",
    "yes!", "note;", "http://foo.bar", "5", "minute", "`code`", "**bold**",
    "<!-- aside -->",
]  # fmt: skip
CJK_WORDS = ["缓存", "数据库", "迁移完成。", "为什么？", "好！", "テスト", "한국어", "……"]
WORD = st.sampled_from(ASCII_WORDS + CJK_WORDS)


def text_line(max_words: int = 60) -> st.SearchStrategy[str]:
    return st.builds(
        lambda prefix, words: prefix + " ".join(words),
        st.sampled_from(["", "- ", "* ", "  - ", "1. ", "> "]),
        st.lists(WORD, min_size=1, max_size=max_words),
    )


ANCHOR_LINE = st.builds(
    lambda s, t: f"<!-- session:{s} turn:{t} transcript:/home/dev/.pi/s/{s}.jsonl -->",
    st.text("0123456789abcdef", min_size=4, max_size=12),
    st.text("0123456789abcdef", min_size=8, max_size=8),
)
HEADING_LINE = st.builds(
    lambda level, words: "#" * level + " " + " ".join(words),
    st.integers(1, 6),
    st.lists(WORD, min_size=1, max_size=5),
)


@st.composite
def ordinary_markdown(draw: st.DrawFn) -> str:
    """Headings 1-6, paragraphs, blank lines, one anchor per section, CJK,
    long sections with paragraph breaks; lines at most 499 characters and
    every text line distinct (see the ordinary definition)."""
    counter = iter(range(1_000_000))

    def unique(line: str) -> str:
        return f"{line[:480]} [{next(counter)}]"

    def paragraphs(min_size: int, max_size: int, words: int) -> list[str]:
        out: list[str] = []
        for para in draw(
            st.lists(
                st.lists(text_line(words), min_size=1, max_size=6),
                min_size=min_size,
                max_size=max_size,
            )
        ):
            out.extend(unique(line) for line in para)
            out.extend([""] * draw(st.integers(1, 2)))
        return out

    lines: list[str] = []
    if draw(st.booleans()):
        lines += paragraphs(1, 2, 10)
    for _ in range(draw(st.integers(1, 6))):
        lines.append(draw(HEADING_LINE))
        if draw(st.booleans()):
            lines.append(draw(ANCHOR_LINE))
        if draw(st.integers(0, 3)) == 0:
            lines += paragraphs(8, 16, 60)  # a long section, well over 1500 chars
        else:
            lines += paragraphs(0, 3, 20)
    text = "\n".join(lines)
    return text + draw(st.sampled_from(["", "\n", "\n\n"]))


# Lines that break memsearch: run-on lines, repeated characters, lines right
# at the limit, headings or comment runs before a huge line, duplicates.
HUGE_LINE = st.one_of(
    st.builds(lambda w: " ".join(w), st.lists(WORD, min_size=300, max_size=900)),
    st.builds(
        lambda c, n: c * n, st.sampled_from(["x", "数", "ab", ". "]), st.integers(1400, 5000)
    ),
    st.builds(lambda n: "y" * n, st.sampled_from([1499, 1500, 1501, 3000])),
)
NASTY_LINE = st.one_of(
    HUGE_LINE,
    text_line(60),
    st.just(""),
    st.just("   "),
    ANCHOR_LINE,
    HEADING_LINE,
    st.just("<!-- a comment that never closes"),
    st.just("-->"),
    st.just("#"),
    st.just("#  "),
)


@st.composite
def pathological_markdown(draw: st.DrawFn) -> str:
    lines = draw(st.lists(NASTY_LINE, min_size=1, max_size=40))
    if draw(st.booleans()):  # repeat a block verbatim
        lines += lines[: draw(st.integers(0, len(lines)))]
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return newline.join(lines)


# --- parity -----------------------------------------------------------------


@pytest.mark.parity
@FAST
@given(ordinary_markdown())
def test_parity_with_memsearch_on_ordinary_markdown(text: str) -> None:
    assert is_ordinary(text), "the ordinary generator produced a non-ordinary document"
    ours = our_rows(chunk_markdown(text, SOURCE, MODEL))
    split = any(len(in_section(ours, s, e)) > 1 for s, e, _, _ in sections(text))
    event("has a split section" if split else "no split section")
    assert ours == memsearch_rows(text)


@FAST
@given(pathological_markdown())
def test_invariants_on_pathological_markdown(text: str) -> None:
    assert_invariants(text, chunk_markdown(text, SOURCE, MODEL))


@pytest.mark.parity
@FAST
@given(pathological_markdown())
def test_partial_parity_on_pathological_markdown(text: str) -> None:
    # Sections are chunked independently: every ordinary section still matches.
    theirs, ours = memsearch_rows(text), our_rows(chunk_markdown(text, SOURCE, MODEL))
    lines = text.split("\n")
    for start, end, _, _ in sections(text):
        section_text = "\n".join(lines[start:end])
        if is_ordinary(section_text):
            assert in_section(ours, start, end) == in_section(theirs, start, end)
        else:
            event("non-ordinary section")


@FAST
@given(ordinary_markdown(), st.sampled_from([200, 500, 1500]), st.integers(0, 3))
def test_invariants_hold_for_other_limits(text: str, size: int, overlap: int) -> None:
    chunks = chunk_markdown(text, SOURCE, MODEL, max_chunk_size=size, overlap_lines=overlap)
    assert_invariants(text, chunks, size)


@pytest.mark.parity
@FAST
@given(ordinary_markdown(), st.sampled_from([200, 500, 1500]), st.integers(0, 3))
def test_parity_holds_for_other_limits_when_ordinary(text: str, size: int, overlap: int) -> None:
    kwargs = {"max_chunk_size": size, "overlap_lines": overlap}
    chunks = chunk_markdown(text, SOURCE, MODEL, **kwargs)
    if is_ordinary(text, **kwargs):
        event("ordinary")
        assert our_rows(chunks) == memsearch_rows(text, **kwargs)


LONG_ENTRY = (
    "# 2026-08-13\n\n## Session 09:00\n### 09:01\n"
    + "\n\n".join(
        "\n".join(
            f"- line {p}.{n}: the agent moved the cache to redis; ttl 5 min." for n in range(6)
        )
        for p in range(20)
    )
    + "\n"
)


def test_long_sections_split_with_overlap() -> None:
    assert is_ordinary(LONG_ENTRY)
    chunks = chunk_markdown(LONG_ENTRY, SOURCE, MODEL)
    assert len(chunks) >= 4  # the long entry really was split, with overlap
    assert_invariants(LONG_ENTRY, chunks)
    for previous, current in itertools.pairwise(chunks):
        # each piece repeats the previous one's tail
        assert previous.start_line < current.start_line <= previous.end_line


@pytest.mark.parity
def test_long_sections_split_identically() -> None:
    assert our_rows(chunk_markdown(LONG_ENTRY, SOURCE, MODEL)) == memsearch_rows(LONG_ENTRY)


# --- pathological examples memsearch gets wrong ----------------------------


PATHOLOGICAL_EXAMPLES = [
    pytest.param("x" * 5000, id="one run-on line of one character"),
    pytest.param("## Notes\n" + "y" * 4000, id="heading then a huge line"),
    pytest.param(
        "## Notes\n" + "\n".join(["A long sentence here. " * 100] * 3), id="long lines in a row"
    ),
    pytest.param(
        "### 10:00\n" + "<!-- c -->\n" * 200 + "- " + "word " * 600, id="comment run then text"
    ),
]


@pytest.mark.parametrize("text", PATHOLOGICAL_EXAMPLES)
def test_pathological_examples_keep_the_invariants(text: str) -> None:
    assert not is_ordinary(text)
    assert_invariants(text, chunk_markdown(text, SOURCE, MODEL))


@pytest.mark.parity
@pytest.mark.parametrize("text", PATHOLOGICAL_EXAMPLES)
def test_memsearch_misbehaves_on_the_pathological_examples(text: str) -> None:
    theirs = memsearch_rows(text)
    bad = len({r[0] for r in theirs}) < len(theirs) or not all(ms_meaningful(r[0]) for r in theirs)
    assert bad, "memsearch no longer misbehaves here; revisit the ordinary definition"


def test_single_character_run_keeps_distinct_ids() -> None:
    chunks = chunk_markdown("z" * 5000, SOURCE, MODEL)
    assert len({c.chunk_hash for c in chunks}) == len(chunks)
    assert [c.content for c in chunks] == ["z" * 1500, "z" * 500]


def test_heading_is_never_alone() -> None:
    chunks = chunk_markdown("## Notes\n" + "y" * 4000, SOURCE, MODEL)
    assert chunks[0].content.startswith("## Notes\ny")
    assert all(c.content != "## Notes" for c in chunks)


# --- small exact cases --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "just a preamble",
        "x",
        "## Session 10:00\n",  # heading only: dropped
        "## A\n<!-- only a comment -->\n",  # comment only: dropped
        "intro\n# One\nbody\n## Two\n\nmore\n",
        "#NoSpace\n#  \n####### seven\n",
        "## CRLF\r\nline one\r\nline two\r\n",
        "\ufeff# BOM title\nbody",
        "a\u2028b\n## H\nc\x0bd",
    ],
)
@pytest.mark.parity
def test_small_documents_match_memsearch(text: str) -> None:
    assert is_ordinary(text)
    assert our_rows(chunk_markdown(text, SOURCE, MODEL)) == memsearch_rows(text)


def test_crlf_content_keeps_carriage_returns() -> None:
    text = "### 10:00\r\n<!-- session:s turn:t transcript:/t.jsonl -->\r\n- moved to redis\r\n"
    [chunk] = chunk_markdown(text, SOURCE, MODEL)
    assert chunk.heading == "10:00"
    assert (
        chunk.content
        == "### 10:00\r\n<!-- session:s turn:t transcript:/t.jsonl -->\r\n- moved to redis"
    )
    assert (chunk.start_line, chunk.end_line) == (1, 4)
    assert chunk.embedding_text == "### 10:00\r\n\r\n- moved to redis"


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        chunk_markdown("x", SOURCE, MODEL, max_chunk_size=0)
    with pytest.raises(ValueError):
        chunk_markdown("x", SOURCE, MODEL, overlap_lines=-1)
    assert (MAX_CHUNK_SIZE, OVERLAP_LINES) == (1500, 2)


# --- golden: a realistic daily file -----------------------------------------

DAILY = """\
# 2026-08-13

## Session 09:14
### 09:14
<!-- session:3f2c9b1e turn:ab12cd34 transcript:/home/dev/.pi/agent/sessions/a.jsonl -->
- the user and the agent moved the hot cache to Redis with 5 minute TTLs
- the agent noted that `cache.py` still imports the old memcached client

### 09:52
<!-- session:3f2c9b1e turn:0f9e8d7c transcript:/home/dev/.pi/agent/sessions/a.jsonl -->
- the user asked why staging p99 latency doubled; the agent traced it to TTL stampedes
  - fix: jittered TTLs (±10%) in `cache/ttl.py`

## Session 14:03
### 14:03
<!-- session:77aa01ff turn:deadbeef transcript:/home/dev/.claude/projects/p/77aa01ff.jsonl -->
- [distillation failed: timeout after 30 s]
- user: 把缓存迁移到 Redis 之后，为什么延迟变高了？
- agent: TTL 同时过期导致缓存击穿。

"""


def test_golden_daily_file() -> None:
    chunks = chunk_markdown(DAILY, SOURCE, MODEL)
    assert [(c.heading, c.heading_level, c.start_line, c.end_line) for c in chunks] == [
        ("09:14", 3, 4, 8),
        ("09:52", 3, 9, 13),
        ("14:03", 3, 15, 21),
    ]
    assert chunks[0].content == (
        "### 09:14\n"
        "<!-- session:3f2c9b1e turn:ab12cd34 transcript:/home/dev/.pi/agent/sessions/a.jsonl -->\n"
        "- the user and the agent moved the hot cache to Redis with 5 minute TTLs\n"
        "- the agent noted that `cache.py` still imports the old memcached client"
    )
    assert chunks[2].content.endswith("- agent: TTL 同时过期导致缓存击穿。")
    assert chunks[1].embedding_text.startswith("### 09:52\n\n- the user asked")


@pytest.mark.parity
def test_golden_daily_file_matches_memsearch() -> None:
    assert our_rows(chunk_markdown(DAILY, SOURCE, MODEL)) == memsearch_rows(DAILY)
