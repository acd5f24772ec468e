"""The input schemas' rules and memlane's own argument checks say the same thing.

A client may check arguments against the schema (or, as Claude Code does,
only show it to the model and send whatever the model wrote): either way
memlane's checks answer with a clear error, and for every combination of
arguments a schema accepts exactly what memlane accepts.
"""

from __future__ import annotations

from itertools import chain, combinations
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memlane.core.errors import MemlaneError
from memlane.engine.project import Memory
from memlane.engine.shared.tool_catalog import (
    MEMORY_FORGET_SPEC,
    MEMORY_TOPIC_SPEC,
    SPECS,
    TOPIC_ACTION_ARGUMENTS,
    TOPIC_ACTIONS,
    TOPIC_FIELDS,
    topic_action_usage,
)
from memlane.engine.tools.dispatch import Tools

VALUES = {"chunk_hash": "abcd1234", "date": "2026-08-13", "time": "14:02"}
TOPIC_VALUES = {"type": "project", "scope": "memory"}


def _subsets(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    return list(chain.from_iterable(combinations(names, n) for n in range(len(names) + 1)))


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_every_input_schema_is_valid_with_no_root_composition(spec: Any) -> None:
    schema = spec.json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert not {"oneOf", "anyOf", "allOf"} & set(schema)


@pytest.mark.parametrize("names", _subsets(tuple(VALUES)), ids=lambda n: "+".join(n) or "none")
def test_forget_schema_accepts_what_memory_forget_accepts(
    memory: Memory, names: tuple[str, ...]
) -> None:
    arguments = {name: VALUES[name] for name in names}
    by_schema = Draft202012Validator(MEMORY_FORGET_SPEC.json_schema()).is_valid(arguments)
    try:
        Tools(memory).call("memory_forget", arguments)
        by_memlane = True
    except MemlaneError as exc:
        # Past the rule, the entry is simply not there (an empty store).
        by_memlane = "memory_forget needs" not in exc.message and "not both" not in exc.message
    assert by_schema == by_memlane == (names in (("chunk_hash",), ("date", "time")))


def _topic_arguments(action: str, names: tuple[str, ...]) -> dict[str, Any]:
    return {"action": action, **{name: TOPIC_VALUES.get(name, "x") for name in names}}


def test_topic_schema_holds_each_action_to_its_arguments() -> None:
    validator = Draft202012Validator(MEMORY_TOPIC_SPEC.json_schema())
    for action in TOPIC_ACTIONS:
        needs, takes = TOPIC_ACTION_ARGUMENTS[action]
        for names in _subsets(TOPIC_FIELDS):
            allowed = set(needs) <= set(names) <= {*needs, *takes}
            arguments = _topic_arguments(action, names)
            assert validator.is_valid(arguments) == allowed, arguments


@pytest.mark.parametrize("action", TOPIC_ACTIONS)
def test_memory_topic_refuses_what_the_schema_refuses_and_says_what_it_takes(
    memory: Memory, action: str
) -> None:
    needs, takes = TOPIC_ACTION_ARGUMENTS[action]
    tools = Tools(memory)
    for names in _subsets(TOPIC_FIELDS):
        if set(needs) <= set(names) <= {*needs, *takes}:
            continue  # accepted: covered by the tool's own tests
        with pytest.raises(MemlaneError) as refused:
            tools.call("memory_topic", _topic_arguments(action, names))
        assert refused.value.message.startswith(f"memory_topic {action} "), names
        assert refused.value.hint and action in refused.value.hint


def test_topic_fields_are_the_specs_own_params() -> None:
    names = [p.name for p in MEMORY_TOPIC_SPEC.params]
    assert list(TOPIC_FIELDS) == [name for name in names if name != "action"]
    for needs, takes in TOPIC_ACTION_ARGUMENTS.values():
        assert {*needs, *takes} <= set(TOPIC_FIELDS)


@pytest.mark.parametrize("action", [a for a in TOPIC_ACTIONS if TOPIC_ACTION_ARGUMENTS[a][0]])
def test_a_missing_argument_is_told_the_schemas_own_sentence(memory: Memory, action: str) -> None:
    with pytest.raises(MemlaneError) as refused:
        Tools(memory).call("memory_topic", {"action": action})
    assert refused.value.hint == topic_action_usage(action)
    rule = MEMORY_TOPIC_SPEC.json_schema()
    while rule["if"]["properties"]["action"]["const"] != action:
        rule = rule["else"]
    assert rule["then"]["description"] == refused.value.hint
