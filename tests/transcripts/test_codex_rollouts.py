"""Codex rollouts: L3 (read_transcript), the message reader, where they are found, the Stop's exchange."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _codex_builders import CodexRollout
from memlane.core.errors import StoreError
from memlane.hosts.codex.exchange import read_turn
from memlane.transcripts import codex, read_transcript
from memlane.transcripts import message as m
from memlane.transcripts.formats import format_of, message_reader, sniff
from memlane.transcripts.locate import Source, discover_sources, format_of_path
from memlane.transcripts.model import CODEX


def rollout_path(home: Path, session: str = "01a2b3c4-sess") -> Path:
    return (
        home
        / ".codex"
        / "sessions"
        / "2026"
        / "08"
        / "13"
        / f"rollout-2026-08-13T14-00-00-{session}.jsonl"
    )


def conversation() -> CodexRollout:
    r = CodexRollout()
    r.prompt("Which cache did we pick for sessions?")
    r.call("exec_command", {"cmd": "grep -r cache"}, "config/cache.toml: redis")
    r.call("memory_search", {"query": "cache"}, '{"hits": []}', namespace="mcp__memlane")
    r.answer("Redis, with 5 minute TTLs.")
    r.prompt("And the deploy codename?")
    r.answer("bluefinch-42.")
    return r


def test_read_transcript_shows_the_conversation_not_the_harness(tmp_path: Path) -> None:
    path = conversation().write(rollout_path(tmp_path))
    t = read_transcript(path)
    assert t.format == CODEX and t.session_id == "01a2b3c4-sess"
    roles = [(turn.role, turn.text) for turn in t.turns]
    assert roles == [
        ("user", "Which cache did we pick for sessions?"),
        ("assistant", "Redis, with 5 minute TTLs."),
        ("user", "And the deploy codename?"),
        ("assistant", "bluefinch-42."),
    ]
    calls = [c.name for c in t.turns[1].tool_calls]
    assert calls == ["exec_command", "mcp__memlane__memory_search"]
    rendered = t.render()
    assert "environment_context" not in rendered and "hook context" not in rendered


def test_an_anchor_turn_resolves_to_its_answer(tmp_path: Path) -> None:
    path = conversation().write(rollout_path(tmp_path))
    t = read_transcript(path, "msg-answer-1", context=0)
    assert t.target == "msg-answer-1"
    assert [turn.text for turn in t.turns] == ["Redis, with 5 minute TTLs."]


def test_the_message_reader_and_the_format_sniff() -> None:
    lines = [json.loads(line) for line in conversation().lines]
    assert sniff(lines) == CODEX and format_of(lines[0]) == CODEX
    read = message_reader(CODEX)
    messages = [read(obj) for obj in lines]
    kinds = [(x.role, x.text) for x in messages if isinstance(x, m.Message) and x.role != m.TOOL]
    assert ("user", "Which cache did we pick for sessions?") in kinds
    assert not any("environment_context" in text for _, text in kinds)
    tools = [x for x in messages if isinstance(x, m.Message) and x.role == m.TOOL]
    assert [o.text for t in tools for o in t.outputs] == [
        "config/cache.toml: redis",
        '{"hits": []}',
    ]
    assert codex.message({"type": "brand_new_kind", "payload": {}}) is m.Skip.UNKNOWN
    assert codex.message({"type": "event_msg", "payload": {"type": "x"}}) is m.Skip.SILENT


def test_rollouts_are_found_by_the_cwd_their_first_line_names(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {"HOME": str(tmp_path)}
    mine = CodexRollout("a", str(project))
    mine.prompt("hi")
    mine.answer("hello")
    theirs = CodexRollout("b", str(tmp_path / "elsewhere"))
    mine_path = mine.write(rollout_path(tmp_path, "a"))
    theirs.write(rollout_path(tmp_path, "b"))
    assert discover_sources([project], env) == [Source(mine_path, CODEX)]
    assert format_of_path(mine_path) == CODEX
    # CODEX_HOME moves them
    moved = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "elsewhere-home")}
    assert discover_sources([project], moved) == []


def test_the_stop_reads_the_turn_it_names(tmp_path: Path) -> None:
    r = conversation()
    path = r.write(rollout_path(tmp_path))
    turn = read_turn(str(path), "s1", "turn-1")
    assert turn is not None
    assert turn.exchange.user == "Which cache did we pick for sessions?"
    assert turn.exchange.assistant == "Redis, with 5 minute TTLs."
    assert turn.exchange.entry_id == "msg-answer-1" and turn.key == "turn-1"
    assert turn.exchange.tools == ("exec_command", "mcp__memlane__memory_search")
    last = read_turn(str(path), "s1", "turn-2")
    assert last is not None and last.exchange.assistant == "bluefinch-42."


def test_the_stop_before_the_rollout_holds_the_answer(tmp_path: Path) -> None:
    r = CodexRollout()
    r.prompt("What is the codename?")
    path = r.write(rollout_path(tmp_path))
    assert read_turn(str(path), "s1", "turn-1") is None  # no answer anywhere yet
    turn = read_turn(str(path), "s1", "turn-1", "It is bluefinch-42.")
    assert turn is not None and turn.exchange.assistant == "It is bluefinch-42."
    # the prompt not written yet either: the one UserPromptSubmit reported
    empty = CodexRollout().write(rollout_path(tmp_path, "empty"))
    known = read_turn(str(empty), "s1", "turn-9", "Yes.", ("turn-9", "Is it Friday?"))
    assert known is not None and known.exchange.user == "Is it Friday?" and known.key == "turn-9"


words = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
#: A user message that starts like one Codex injects itself (``<skill>``,
#: ``<environment_context>``...) is read as Codex's, not as a prompt: the
#: rollout does not tell them apart (tested on its own above).
prompts = words.filter(lambda text: not text.strip().startswith(codex.HARNESS_PREFIXES))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.tuples(prompts, words), min_size=1, max_size=6))
def test_any_conversation_reads_back_in_order(tmp_path: Path, turns: list[tuple[str, str]]) -> None:
    r = CodexRollout()
    for prompt, answer in turns:
        r.prompt(prompt.strip() or "x")
        r.answer(answer.strip() or "y")
    path = r.write(tmp_path / "rollout-prop.jsonl")
    t = read_transcript(path, limit=100)
    expected = []
    for prompt, answer in turns:
        expected += [("user", prompt.strip() or "x"), ("assistant", answer.strip() or "y")]
    assert [(turn.role, turn.text) for turn in t.turns] == expected
    last = read_turn(str(path), "s", r.turn_id)
    assert last is not None and last.exchange.assistant == expected[-1][1]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
lines = st.fixed_dictionaries(
    {"type": st.sampled_from([*sorted(codex.TYPES), "other"])},
    optional={
        "payload": st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "role",
                    "id",
                    "content",
                    "call_id",
                    "name",
                    "namespace",
                    "output",
                    "arguments",
                    "message",
                ]
            ),
            json_values,
            max_size=6,
        ),
        "ordinal": st.integers(),
    },
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(objs=st.lists(lines, max_size=12))
def test_any_lines_read_without_crashing(tmp_path: Path, objs: list[dict[str, object]]) -> None:
    for obj in objs:
        codex.message(obj)  # never raises
        codex.draft(obj)
    head = CodexRollout().lines[0]
    path = tmp_path / "rollout-fuzz.jsonl"
    path.write_text(head + "\n" + "".join(json.dumps(o) + "\n" for o in objs))
    with contextlib.suppress(StoreError):  # only a store error, said plainly
        read_transcript(path)
    read_turn(str(path), "s", None)


def test_a_broken_rollout_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("not json\n")
    with pytest.raises(StoreError):
        read_transcript(path)
