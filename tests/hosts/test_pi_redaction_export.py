"""The redaction rules the pi package ships are the engine's own.

integrations/pi/extensions/memlane/redaction-patterns.json is generated from
the Python rules (memlane.hosts.pi.redaction_js): the shipped file must be
exactly what the rules export now, so a rule changed in Python without
regenerating it fails here. The conversion of each regex to JavaScript is
checked on the shapes the rules use; tests/e2e/test_pi_redaction.py runs the
whole secret table through the TypeScript redactor itself.
"""

from __future__ import annotations

import json
import re

import pytest

from memlane.hosts.pi.redaction_js import (
    UnconvertibleRegex,
    export,
    package_file,
    render,
    to_js,
)


def test_the_shipped_patterns_are_what_the_rules_export_now() -> None:
    shipped = package_file().read_text(encoding="utf-8")
    assert shipped == render(), (
        "redaction-patterns.json is out of date: run `python -m memlane.hosts.pi.redaction_js`"
    )


def test_every_token_pattern_and_rule_of_the_engine_is_exported() -> None:
    from memlane.store.redaction_patterns import pattern_set

    table = export()
    assert len(table["tokens"]) == len(pattern_set().tokens)
    assert len(table["keyword"]) == len(pattern_set().keyword)
    assert len(table["private_key_headers"]) == len(pattern_set().private_key_headers)
    json.dumps(table)  # plain data only


@pytest.mark.parametrize(
    ("pattern", "flags", "js"),
    [
        (r"(?P<v>\d+)", 0, r"(?<v>\d+)"),
        (r"a.b", 0, r"a[^\n]b"),
        (r"a.b", re.DOTALL, r"a[\s\S]b"),
        (r"\Aab\Z", 0, r"^ab$"),
        (r"ab$", 0, r"ab(?=\n?$)"),
        (r"^ab$", re.MULTILINE, r"(?:^|(?<=\n))ab(?=\n|$)"),
        (r"x([]'\"]{0,2})", 0, r"x([\]'\"]{0,2})"),
        (r"[A-Za-z0-9-_]", 0, r"[A-Za-z0-9\-_]"),
        (r"(?<![\w-])--x", 0, r"(?<![\w\-])--x"),
    ],
)
def test_a_python_regex_becomes_the_same_regex_in_javascript(
    pattern: str, flags: int, js: str
) -> None:
    assert to_js(pattern, flags)[0] == js


def test_a_case_sensitive_group_in_a_case_blind_pattern_is_spelled_out() -> None:
    source, js_flags = to_js(r"k(?-i:[a-z](?=Key))s", re.IGNORECASE)
    assert js_flags == ""
    assert source == "[kK](?:[a-z](?=Key))[sS]"
    assert to_js("key", re.IGNORECASE) == ("key", "i")


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [(r"(?>atomic)", 0), (r"(?(1)a|b)", 0), (r"a b", re.VERBOSE), (r"\N{DASH}", 0)],
)
def test_syntax_the_converter_does_not_know_is_refused(pattern: str, flags: int) -> None:
    with pytest.raises(UnconvertibleRegex):
        to_js(pattern, flags)
