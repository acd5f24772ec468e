"""What a big text costs to redact: the shortcuts ``redact`` takes must never let a secret by."""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.plugins import keyword as ds_keyword
from hypothesis import given
from hypothesis import strategies as st

from memlane.store import keyword_regexes, redaction
from memlane.store.redaction import SETTLED_MIN_CHARS, redact


def _key() -> str:
    # An OpenAI-shaped project key, assembled at run time (no literal secret here).
    body = "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7jKl0nOp3rSt6vWx9zA2cE5gH8kM1"
    return "sk-" + "proj-" + body + "T3Blbk" + "FJ" + body[::-1]


def _long_text(secret: str) -> str:
    lines = [f"- step {i}: the exporter wrote batch {i} to the bucket" for i in range(2000)]
    lines.insert(1000, f'client = Client(api_key="{secret}")')
    text = "\n".join(lines)
    assert len(text) >= SETTLED_MIN_CHARS
    return text


def test_every_detect_secrets_keyword_holds_a_root_the_line_filter_looks_for() -> None:
    # A line without a root skips the keyword regexes: a keyword without one
    # (a new detect-secrets word) would never be looked for.
    for word in ds_keyword.DENYLIST:
        assert keyword_regexes.KEYWORD_ROOT_RE.search(word.replace("_?", "")), word
        assert keyword_regexes.KEYWORD_ROOT_RE.search(word.replace("_?", "_")), word


def test_a_keyword_secret_in_a_long_text_is_still_redacted() -> None:
    secret = "hunter2-but-longer-9f8e7d"
    text = "\n".join(["plain line of prose"] * 5000 + [f'db_password = "{secret}"'])
    result = redact(text)
    assert secret not in result.text and result.count == 1, result.kinds


def test_a_long_text_just_redacted_is_handed_back_without_a_second_scan() -> None:
    first = redact(_long_text(_key()))
    assert first.count >= 1 and _key() not in first.text
    # What the engine's scan returned is what Memory.write then scans again:
    # handed back as it is, with the first scan's count (the write reports it).
    again = redact(first.text)
    assert again == first


def test_the_shortcut_is_for_results_only_a_secret_given_twice_is_redacted_twice() -> None:
    text = _long_text(_key())
    for _ in range(2):
        result = redact(text)
        assert _key() not in result.text and result.count >= 1


_marker_runs = st.lists(st.tuples(st.integers(0, 6), st.integers(1, 6)), max_size=8)
_spans = st.lists(
    st.tuples(st.integers(0, 80), st.integers(0, 12)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=12,
)


@given(gaps_and_lengths=_marker_runs, spans=_spans)
def test_a_span_is_kept_exactly_when_it_overlaps_no_marker(
    gaps_and_lengths: list[tuple[int, int]], spans: list[tuple[int, int]]
) -> None:
    taken, position = [], 0
    for gap, length in gaps_and_lengths:  # markers in order, never overlapping
        taken.append((position + gap, position + gap + length))
        position += gap + length
    candidates = [redaction.SecretSpan(start, end, "token") for start, end in spans]
    expected = [
        s for s in candidates if not any(s.start < end and start < s.end for start, end in taken)
    ]
    assert redaction.clear_of(candidates, taken) == expected


def test_a_log_of_many_redacted_lines_with_secrets_is_redacted_whole() -> None:
    # Every line holds a secret and an earlier marker: both kept apart, line by line.
    text = "export DB_PASSWORD=hunter2xyz9 # was [REDACTED:token]\n" * 3000
    result = redact(text)
    assert result.count == 3000 and "hunter2xyz9" not in result.text
    assert result.text.count("[REDACTED:token]") == 3000


# Pieces that make keyword regexes match, half-match and backtrack: keywords
# run together, word glue, every operator and quote they look for.
_KEYWORD_PIECES = st.sampled_from(
    [
        "password", "PASSWD", "db_pass", "api_key", "apikey", "secret", "pwd", "contraseña",
        "x", "_", "9", "Zq8vR2mXw4", " ", "=", "==", ":", ":=", "=>", "(", ".assign(",
        '"', "'", "`", ";", ",", "[0]", "!=", "@",
    ]
)  # fmt: skip


@given(st.lists(_KEYWORD_PIECES, max_size=40).map("".join))
def test_keyword_regexes_find_what_a_full_scan_finds(line: str) -> None:
    from memlane.store.redaction_patterns import pattern_set

    for regex, _ in pattern_set().keyword:
        expected = [(m.span(), m.groups()) for m in regex.finditer(line)]
        got = [(m.span(), m.groups()) for m in keyword_regexes.keyword_matches(regex, line)]
        assert got == expected, (regex.pattern[:60], line)


def test_a_long_run_of_keywords_costs_linear_time_not_minutes() -> None:
    # "password" 500 times took 3.6 s of CPU (quadratic backtracking, holding
    # the interpreter lock: every other request of the engine waited). Counted
    # in regex tries, not timed: a keyword regex is tried once per run of word
    # characters, where a full scan tries it at each of the 5,000 keywords.
    from memlane.store.redaction_patterns import pattern_set

    line = "password" * 5000 + " = 'Zq8vR2mXw4LpT9aa'"
    keyword_first = [r for r, _ in pattern_set().keyword if r.pattern.startswith("(api_?key|")]
    assert len(keyword_first) >= 3
    for regex in keyword_first:
        counting = _CountingRegex(regex)
        list(keyword_regexes.keyword_matches(counting, line))  # type: ignore[arg-type]
        assert counting.tries <= 2, (regex.pattern[:60], counting.tries)


class _CountingRegex:
    """A compiled regex that counts the starting points it is tried at."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self.pattern = regex.pattern
        self.flags = regex.flags
        self.tries = 0

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.tries += 1
        return self.regex.match(text, pos)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        self.tries += text.count("password")  # the starts a full scan tries
        return self.regex.finditer(text)
