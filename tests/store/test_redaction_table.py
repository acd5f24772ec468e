"""The redaction table (issue 14 item 4): >= 60 secret kinds, >= 40 ordinary lines.

Every row of ``secret_fakes.SECRETS`` must be replaced exactly (only the
value, the rest byte-identical); every line of ``ORDINARY`` must come through
unchanged. The rows are generated fakes (tests/secret_fakes.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.store.redaction import Redaction, redact
from secret_fakes import ONE_LINE, ORDINARY, SECRETS, SecretCase


def test_the_table_covers_sixty_kinds_and_forty_ordinary_lines() -> None:
    assert len({case.name for case in SECRETS}) == len(SECRETS) >= 60
    assert len(set(ORDINARY)) == len(ORDINARY) >= 40


@pytest.mark.parametrize("case", SECRETS, ids=[case.name for case in SECRETS])
def test_each_secret_kind_is_replaced_and_nothing_else(case: SecretCase) -> None:
    result = redact(case.text)
    assert result.text == case.redacted
    assert (result.count, result.kinds) == (1, (case.kind,))
    assert redact(result.text) == Redaction(result.text, 0, ())  # idempotent


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_technical_lines_pass_through_unchanged(line: str) -> None:
    assert redact(line) == Redaction(line, 0, ())


def test_all_kinds_in_one_text_leave_no_secret() -> None:
    text = "\n\n".join(case.text for case in SECRETS)
    result = redact(text)
    for case in SECRETS:
        assert case.secret not in result.text, case.name
    assert result.count == len(SECRETS)


# --- in the middle of a sentence (issue 28) --------------------------------------------------

_WORDS = ["we", "set", "then", "ran", "the", "deploy", "again", "note", "for", "CI", "is", "was"]
_prose = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)
_opening = st.sampled_from(["", "(", "`", "so: ", "- "])
_closing = st.sampled_from(["", ")", "`", ",", ".", ";", ":", "!", "?"])


@pytest.mark.parametrize("case", ONE_LINE, ids=[case.name for case in ONE_LINE])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_prose, opening=_opening, closing=_closing, after=_prose)
def test_each_secret_kind_mid_sentence_leaves_no_piece_of_it(
    case: SecretCase, before: str, opening: str, closing: str, after: str
) -> None:
    text = f"{before} {opening}{case.line}{closing} {after}"
    result = redact(text)
    assert not [piece for piece in case.fragments() if piece in result.text], result.text
    assert result.text.startswith(f"{before} {opening}")
    assert result.text.endswith(f" {after}")
    assert result.count >= 1


def test_ordinary_lines_mid_sentence_pass_through_unchanged() -> None:
    for line in ORDINARY:
        text = f"As noted, {line} and that was all."
        assert redact(text).text == text, line
