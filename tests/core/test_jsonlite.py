"""core/jsonlite.py: the thin clients' JSON without the json module, held to json's own."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.core import jsonlite

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=25,
)


@given(VALUES)
def test_what_it_writes_json_reads_back_and_what_json_writes_it_reads(value: Any) -> None:
    assert json.loads(jsonlite.dumps(value)) == value
    assert jsonlite.loads(json.dumps(value).encode()) == value
    assert jsonlite.dumps(value) == json.dumps(value)  # the same text, byte for byte


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [float("-inf")]])
def test_a_value_json_cannot_carry_is_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        jsonlite.dumps(value)


@pytest.mark.parametrize("text", [b"", b"{", b'{"a": 1} trailing', b"[1, 2", b"\xff"])
def test_what_is_not_one_json_value_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError):
        jsonlite.loads(text)


@given(VALUES)
def test_the_mcp_servers_json_is_jsons_own(value: Any) -> None:
    compact = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert jsonlite.dumps_compact(value) == compact  # the same text, byte for byte
    assert jsonlite.loads_text(" \n" + compact + "\r\n") == json.loads(compact)


@pytest.mark.parametrize("value", [float("nan"), {"a": [float("inf")]}, {"p": object()}])
def test_the_mcp_servers_json_refuses_what_json_refuses(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as mine:
        jsonlite.dumps_compact(value)
    with pytest.raises((TypeError, ValueError)) as theirs:
        json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert mine.type is theirs.type


def test_a_cycle_is_refused_as_json_refuses_it() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError):
        jsonlite.dumps_compact(cycle)
