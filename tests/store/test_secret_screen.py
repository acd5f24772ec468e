"""The query screen (store/secret_screen.py) lets no secret through unredacted.

Its promise: text it waves through is text the redactor would not change,
so a search with a plain-words query need not load the redactor.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.store.redaction import redact
from memlane.store.secret_screen import redacted_for_display
from secret_fakes import ORDINARY, SECRETS, SecretCase, in_sentence

_letters_and_blanks = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ \t\n"),
    max_size=200,
)
_short_runs = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), max_size=7), max_size=20
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_letters_and_blanks, _short_runs))
def test_text_the_screen_waves_through_is_text_the_redactor_keeps(text: str) -> None:
    assert redacted_for_display(text) == redact(text).text


@pytest.mark.parametrize("case", SECRETS, ids=[case.name for case in SECRETS])
def test_every_secret_kind_is_redacted_for_display(case: SecretCase) -> None:
    assert case.secret not in redacted_for_display(case.text)
    if "\n" not in case.secret:
        assert case.secret not in redacted_for_display(in_sentence(case))


def test_ordinary_lines_are_shown_unchanged() -> None:
    for line in ORDINARY:
        assert redacted_for_display(line) == line


@pytest.mark.subprocess
def test_a_plain_words_query_does_not_load_the_redactor() -> None:
    import subprocess

    code = (
        "import sys\n"
        "from memlane.store.secret_screen import redacted_for_display\n"
        "assert redacted_for_display('how do we deploy the staging database') == "
        "'how do we deploy the staging database'\n"
        "assert 'memlane.store.redaction' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
