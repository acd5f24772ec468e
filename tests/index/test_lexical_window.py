"""The lexical leg's cost bound: past the budget, BM25 ranks the newest rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import make_file, src
from hypothesis import given
from hypothesis import strategies as st

from memlane.index.legs import query as query_mod
from memlane.index.legs.query import LEXICAL_DOC_BUDGET, window_floor
from memlane.index.sqlite.notes import SqliteIndex


@given(
    matches=st.integers(min_value=0, max_value=10**7),
    lowest=st.integers(min_value=1, max_value=10**6),
    span=st.integers(min_value=1, max_value=10**7),
)
def test_the_window_holds_about_the_budget(matches: int, lowest: int, span: int) -> None:
    highest = lowest + span - 1
    floor = window_floor(matches, lowest, highest)
    if matches <= LEXICAL_DOC_BUDGET:
        assert floor is None
        return
    assert floor is not None and lowest <= floor <= highest
    window = highest - floor + 1
    # Matches spread evenly over the ids: the window's share holds ~ the budget.
    assert window * matches <= span * LEXICAL_DOC_BUDGET + matches


def test_an_empty_index_reads_everything() -> None:
    assert window_floor(10**6, 0, -1) is None


def lexical_sources(index: SqliteIndex, query: str, k: int = 100) -> list[str]:
    _mode, hits = index.search(query, None, k)
    return [hit.chunk.source for hit in hits]


def test_a_query_of_common_words_ranks_the_newest_rows(
    index: SqliteIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for day in range(40):
        rare = " zebra" if day == 0 else ""
        record, chunks = make_file(src(tmp_path, f"d{day:02d}.md"), [f"- alpha day{day}{rare}"])
        index.replace_file(record, chunks, {})
    assert len(lexical_sources(index, "alpha")) == 40  # within the budget: every match
    monkeypatch.setattr(query_mod, "LEXICAL_DOC_BUDGET", 10)
    newest = lexical_sources(index, "alpha")
    assert sorted(newest) == [src(tmp_path, f"d{day:02d}.md") for day in range(30, 40)]
    # A rarer word is ranked over the whole store: the oldest chunk is found.
    assert lexical_sources(index, "alpha zebra")[0] == src(tmp_path, "d00.md")
