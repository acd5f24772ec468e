"""Quoting and checking text memlane did not write (core/untrusted.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlane.core.untrusted import EXCERPT_CHARS, excerpt, path_problem


@given(st.text(max_size=2000))
def test_an_excerpt_is_one_printable_bounded_line(text: str) -> None:
    shown = excerpt(text)
    assert shown.isprintable()  # no newline, escape sequence or NUL survives
    # repr spends at most 10 characters on one (\U0010ffff), plus the length note.
    assert len(shown) <= 10 * EXCERPT_CHARS + 40
    if len(text) > EXCERPT_CHARS:
        assert shown.endswith(f"… ({len(text):,} characters)")


@given(st.text(), st.text())
def test_a_nul_byte_is_never_a_path(head: str, tail: str) -> None:
    for allowed in (False, True):
        problem = path_problem(head + "\0" + tail, control_characters=allowed)
        assert problem is not None and "NUL" in problem


def test_path_problems_name_what_is_wrong() -> None:
    assert path_problem("/home/you/proj/.memsearch/memory") is None
    assert path_problem("/home/\udcffbytes/memory") is None  # not UTF-8, still a name
    assert path_problem("/a\tb") == "holds a control character (\\t at position 3)"
    assert path_problem("/a\tb", control_characters=True) is None
    assert path_problem("/x/\ud800") == "is not valid text for a file name"
    assert "4,097 bytes long" in (path_problem("/" + "a/" * 2048) or "")
    assert "component of 256 bytes" in (path_problem("/" + "é" * 128) or "")
