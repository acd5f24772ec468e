"""memory_transcript (L3): one test per rule of the reader."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memlane.transcripts as transcripts
from _transcript_builders import ClaudeSession, PiSession
from memlane.core.errors import MemlaneError, NotFoundError, StoreError
from memlane.transcripts import Transcript, read_transcript
from memlane.transcripts.render import MAX_TOOL_ARGS, TOOL_ARG_CHARS


def ids(t: Transcript) -> list[str]:
    return [turn.id for turn in t.turns]


def conversation_ids(t: Transcript) -> list[str]:
    return [turn.id for turn in t.turns if turn.role in ("user", "assistant")]


def target_ids(t: Transcript) -> list[str]:
    return [turn.id for turn in t.turns if turn.is_target]


@pytest.fixture
def linear(tmp_path: Path) -> Path:
    """Ten exchanges, ids u0/a0 … u9/a9."""
    s = PiSession()
    for i in range(10):
        s.user(f"question {i}", f"u{i}aaaa")
        s.assistant(f"answer {i}", f"a{i}bbbb")
    return s.write(tmp_path / "linear.jsonl")


# --- target resolution ------------------------------------------------------


@pytest.mark.parametrize(
    ("turn", "target", "shown"),
    [
        (
            "a4bbbb",
            "a4bbbb",
            ["u3aaaa", "a3bbbb", "u4aaaa", "a4bbbb", "u5aaaa", "a5bbbb", "u6aaaa"],
        ),
        ("a4b", "a4bbbb", None),  # unique prefix
        ("u0aaaa", "u0aaaa", ["u0aaaa", "a0bbbb", "u1aaaa", "a1bbbb"]),  # nothing before the root
        ("a9bbbb", "a9bbbb", ["u8aaaa", "a8bbbb", "u9aaaa", "a9bbbb"]),  # nothing after the tip
    ],
)
def test_target_by_id_or_unique_prefix(
    linear: Path, turn: str, target: str, shown: list[str] | None
) -> None:
    t = read_transcript(linear, turn)
    assert t.target == target
    assert target_ids(t) == [target]
    if shown is not None:
        assert ids(t) == shown
    assert "◀ target" in t.render()


def test_context_counts_turns_either_side(linear: Path) -> None:
    t = read_transcript(linear, "a4bbbb", context=1)
    assert ids(t) == ["u4aaaa", "a4bbbb", "u5aaaa"]
    assert ids(read_transcript(linear, "a4bbbb", context=0)) == ["a4bbbb"]


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        ("zzz", ["no entry with id or id prefix 'zzz'", "linear.jsonl"]),
        ("a", ["'a' is ambiguous", "10 entries", "linear.jsonl", "more characters"]),
        ("u", ["'u' is ambiguous", "10 entries"]),
    ],
)
def test_unknown_and_ambiguous_turns(linear: Path, turn: str, expected: list[str]) -> None:
    with pytest.raises(NotFoundError) as info:
        read_transcript(linear, turn)
    text = str(info.value)
    for part in expected:
        assert part in text
    assert info.value.hint


def test_exact_id_wins_over_longer_ids_it_prefixes(tmp_path: Path) -> None:
    s = PiSession()
    s.user("one", "abc")
    s.assistant("two", "abcd")
    path = s.write(tmp_path / "s.jsonl")
    assert read_transcript(path, "abc").target == "abc"
    assert read_transcript(path, "abcd").target == "abcd"


# --- the live branch ----------------------------------------------------------


def test_no_turn_shows_last_limit_turns_of_live_branch(linear: Path) -> None:
    t = read_transcript(linear, limit=4)
    assert ids(t) == ["u8aaaa", "a8bbbb", "u9aaaa", "a9bbbb"]
    assert t.target is None and not target_ids(t)
    assert t.branch_turns == 20
    assert "Live branch: last 4 of 20 turns" in t.render()
    assert len(read_transcript(linear).turns) == 20  # TRANSCRIPT_LIMIT


# --- in-file branches (/tree) ---------------------------------------------------


@pytest.fixture
def branched(tmp_path: Path) -> Path:
    """u1 a1 ┬ u2 a2 (approach A, written first)
    └ [branch summary] u3 a3 (approach B, the live leaf)"""
    s = PiSession()
    s.user("help me cache", "u1")
    s.assistant("sure", "a1")
    s.user("approach A: memcached", "u2")
    s.assistant("memcached is set up", "a2")
    s.branch("a1")
    s.branch_summary("a2", "tried memcached, too much ops burden", parent="a1")
    s.user("approach B: redis", "u3")
    s.assistant("redis with 5 minute TTLs", "a3")
    return s.write(tmp_path / "branched.jsonl")


@pytest.mark.parametrize(
    ("turn", "shown", "absent"),
    [
        # Anchored on branch A: the later branch B is not followed.
        ("a2", ["u1", "a1", "u2", "a2"], ["u3", "a3"]),
        ("u2", ["u1", "a1", "u2", "a2"], ["u3", "a3"]),
        # No turn: the live branch is B, whatever lines sit around it.
        (None, ["u1", "a1", "u3", "a3"], ["u2", "a2"]),
        # At the fork point: the last descendant in file order (B) is the tip.
        ("a1", ["u1", "a1", "u3", "a3"], ["u2", "a2"]),
    ],
)
def test_in_file_branch_after_tree_navigation(
    branched: Path, turn: str | None, shown: list[str], absent: list[str]
) -> None:
    t = read_transcript(branched, turn)
    assert conversation_ids(t) == shown
    for entry_id in absent:
        assert entry_id not in ids(t)


def test_branch_summary_shows_as_a_marker(branched: Path) -> None:
    t = read_transcript(branched)
    markers = [turn for turn in t.turns if turn.role == "branch_summary"]
    assert len(markers) == 1
    assert "too much ops burden" in markers[0].text
    assert "branch summary: left branch summarized" in t.render()


# --- forks into new files (/fork, /clone) ----------------------------------------


def test_fork_file_and_old_file_each_follow_their_own_branch(tmp_path: Path) -> None:
    old = PiSession("old-session")
    old.user("plan the migration", "u1")
    old.assistant("step one", "a1")
    old.user("and then?", "u2")
    old.assistant("step two", "a2")
    old_path = tmp_path / "old.jsonl"
    # /fork from a1 copies the path u1,a1 (same ids) into a new file.
    fork = PiSession("new-session", parent_session=str(old_path))
    fork.user("plan the migration", "u1", parent=None)
    fork.assistant("step one", "a1")
    fork.user("what about rollback?", "f1")
    fork.assistant("rollback plan", "f2")
    fork_path = fork.write(tmp_path / "fork.jsonl")
    # The old session continues after the fork was made.
    old.user("ship it", "u3")
    old.assistant("shipped", "a3")
    old.write(old_path)

    forked = read_transcript(fork_path)
    assert conversation_ids(forked) == ["u1", "a1", "f1", "f2"]
    assert forked.parent_session == str(old_path)
    assert f"Forked from {old_path}" in forked.render()
    assert conversation_ids(read_transcript(fork_path, "a1")) == ["u1", "a1", "f1", "f2"]

    anchored = read_transcript(old_path, "a1")
    assert conversation_ids(anchored) == ["u1", "a1", "u2", "a2", "u3"]
    assert "f1" not in ids(anchored) and anchored.session_id == "old-session"
    assert conversation_ids(read_transcript(old_path, "a2", context=5)) == [
        "u1", "a1", "u2", "a2", "u3", "a3",
    ]  # fmt: skip

    with pytest.raises(NotFoundError) as info:
        read_transcript(fork_path, "u3")
    assert str(old_path) in str(info.value)  # the hint points at the parent session


# --- cycles -------------------------------------------------------------------


@pytest.mark.parametrize(
    "parents",
    [
        {"x": "y", "y": "x"},  # two entries pointing at each other
        {"x": "x"},  # self-parent
        {"x": "z", "z": "y", "y": "x"},
    ],
)
def test_cycle_in_parent_links_ends_with_a_note(tmp_path: Path, parents: dict[str, str]) -> None:
    s = PiSession()
    for entry_id, parent in parents.items():
        s.user(f"text {entry_id}", entry_id, parent=parent)
    s.assistant("after", "tip", parent="x")
    path = s.write(tmp_path / "cycle.jsonl")
    for turn in (None, "x", "tip"):
        t = read_transcript(path, turn)
        assert any("cycle" in note for note in t.notes)
        assert "tip" in ids(t)


def test_missing_parent_is_noted(tmp_path: Path) -> None:
    s = PiSession()
    s.user("orphan", "o1", parent="gone")
    s.assistant("reply", "o2")
    t = read_transcript(s.write(tmp_path / "s.jsonl"))
    assert ids(t) == ["o1", "o2"]
    assert any("gone" in note and "not in this file" in note for note in t.notes)


# --- compaction ------------------------------------------------------------------


def test_pi_compaction_is_one_clipped_marker_and_the_walk_continues(tmp_path: Path) -> None:
    s = PiSession()
    s.user("first question", "u1")
    s.assistant("first answer", "a1")
    s.user("second question", "u2")
    s.assistant("second answer", "a2")
    s.compaction("User set up a cache. " + "detail " * 200, first_kept="u2", entry_id="cmp")
    s.user("third question", "u3")
    s.assistant("third answer", "a3")
    path = s.write(tmp_path / "s.jsonl")
    t = read_transcript(path)
    assert ids(t) == ["u1", "a1", "u2", "a2", "cmp", "u3", "a3"]
    marker = t.turns[4]
    assert marker.role == "compaction"
    assert marker.text.startswith("context compacted (50000 tokens before): User set up a cache.")
    assert len(marker.text) <= 200 and "\n" not in marker.text
    # Markers never count as turns of context.
    assert ids(read_transcript(path, "u3", context=1)) == ["a2", "cmp", "u3", "a3"]


# --- rendering rules ------------------------------------------------------------


def test_turn_text_is_capped_with_a_truncation_marker(tmp_path: Path) -> None:
    s = PiSession()
    s.user("x" * 5000, "u1")
    s.assistant("short", "a1")
    path = s.write(tmp_path / "s.jsonl")
    t = read_transcript(path, turn_char_cap=100)
    turn = t.turns[0]
    assert turn.truncated and not t.turns[1].truncated
    assert turn.text == "x" * 100 + "… [truncated 4900 more chars]"
    default = read_transcript(path).turns[0]
    assert default.text.startswith("x" * 2000) and "3000 more chars" in default.text


def test_tool_calls_are_one_line_with_at_most_three_clipped_args(tmp_path: Path) -> None:
    s = PiSession()
    s.user("edit it", "u1")
    s.assistant(
        "editing",
        "a1",
        tool_calls=[
            ("edit", {"path": "src/app.py", "oldText": "a\n" * 100, "newText": "b", "extra": 1}),
            ("bash", {"command": "pytest -q"}),
            ("read", {}),
        ],
    )
    t = read_transcript(s.write(tmp_path / "s.jsonl"))
    calls = t.turns[1].tool_calls
    assert [call.render() for call in calls][1:] == ["bash(command=pytest -q)", "read()"]
    first = calls[0]
    assert len(first.args) == MAX_TOOL_ARGS and first.more_args
    rendered = first.render()
    assert rendered.startswith("edit(path=src/app.py, oldText=a a a") and rendered.endswith(", …)")
    assert "\n" not in rendered
    assert all(len(value) <= TOOL_ARG_CHARS for _, value in first.args)
    assert "  → edit(path=src/app.py" in t.render()


def test_thinking_and_images_are_dropped(tmp_path: Path) -> None:
    s = PiSession()
    s.user(
        [
            {"type": "text", "text": "what is in this screenshot?"},
            {"type": "image", "data": "iVBORw0KGgoBASE64DATA", "mimeType": "image/png"},
        ],
        "u1",
    )
    s.assistant("a login form", "a1", thinking="SECRET-REASONING")
    text = read_transcript(s.write(tmp_path / "s.jsonl")).render()
    assert "what is in this screenshot?" in text and "a login form" in text
    assert "SECRET-REASONING" not in text and "BASE64DATA" not in text


def test_tool_results_are_folded_into_the_assistant_turn(tmp_path: Path) -> None:
    s = PiSession()
    s.user("run the tests", "u1")
    s.assistant("running", "a1", tool_calls=[("bash", {"command": "pytest"})])
    s.tool_result("TOOL-OUTPUT-1", "t1")
    s.assistant("again", "a2", tool_calls=[("bash", {"command": "pytest -x"})])
    s.tool_result("TOOL-OUTPUT-2", "t2")
    s.tool_result("TOOL-OUTPUT-3", "t3")
    s.assistant("all green", "a3")
    t = read_transcript(s.write(tmp_path / "s.jsonl"))
    assert ids(t) == ["u1", "a1", "a2", "a3"]
    assert [turn.folded_results for turn in t.turns] == [0, 1, 2, 0]
    text = t.render()
    assert "TOOL-OUTPUT" not in text
    assert "(2 tool results folded)" in text and "(1 tool result folded)" in text


def test_a_tool_result_target_is_still_shown(tmp_path: Path) -> None:
    s = PiSession()
    s.user("run", "u1")
    s.assistant("running", "a1", tool_calls=[("bash", {"command": "ls"})])
    s.tool_result("OUT", "t1")
    s.assistant("done", "a2")
    t = read_transcript(s.write(tmp_path / "s.jsonl"), "t1")
    assert target_ids(t) == ["t1"]
    assert "tool result of bash" in t.render()


def test_times_are_local_hh_mm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = PiSession()  # entries at 14:01Z, 14:02Z
    s.user("hi", "u1")
    s.assistant("hello", "a1")
    path = s.write(tmp_path / "s.jsonl")
    try:
        monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no DST
        time.tzset()
        t = read_transcript(path)
        assert [turn.time for turn in t.turns] == ["19:31", "19:32"]
        assert "[19:31] user (u1)" in t.render()
        assert "Local date: 2026-08-13" in t.render()
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        assert read_transcript(path).turns[0].time == "14:01"
    finally:
        monkeypatch.undo()
        time.tzset()


# --- robustness -------------------------------------------------------------------


def test_garbage_and_unknown_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    s = PiSession()
    s.user("q", "u1")
    s.raw("this is not json")
    s.raw("[1, 2, 3]")
    s.entry("future_entry_type", "f1")  # unknown type, still a link in the chain
    s.assistant("a", "a1")
    s.raw('{"type":"message","id":"half","parentId":"a1","message":{"role":"us')  # truncated
    t = read_transcript(s.write(tmp_path / "s.jsonl"))
    assert ids(t) == ["u1", "a1"]
    assert "skipped 3 unreadable lines (not a JSON object, or truncated)" in t.notes
    assert "skipped 1 entry of unknown type: future_entry_type ×1" in t.notes
    assert "Note: skipped 3 unreadable lines" in t.render()


def test_pi_1_6_system_usage_and_context_edit_entries_are_known_and_silent(
    tmp_path: Path,
) -> None:
    """pi 1.6 writes the prompt and tool loadout as system messages (the first
    request's in full, later ones as patches), usage entries and context edits."""
    s = PiSession()
    s.system({"preamble": "You are an expert coding assistant", "cwd": "/p"}, ["read", "bash"])
    s.user("where do deploys run", "u1")
    s.usage()
    s.assistant("on the build box", "a1")
    s.system({"skills": None}, ["memory_search"])
    s.context_edit("a1", None)
    s.user("and the staging ones", "u2")
    s.assistant("also there", "a2")
    t = read_transcript(s.write(tmp_path / "s.jsonl"), "a1")
    assert not t.notes
    assert conversation_ids(t) == ["u1", "a1", "u2", "a2"]
    assert "You are an expert coding assistant" not in t.render()
    assert "unknown" not in t.render()


def _expect_error(path: Path, kind: type[MemlaneError], words: list[str]) -> None:
    with pytest.raises(kind) as info:
        read_transcript(path)
    assert str(path) in info.value.message
    for word in words:
        assert word in info.value.message
    assert info.value.hint


def test_file_errors_name_the_path(tmp_path: Path) -> None:
    _expect_error(tmp_path / "nope.jsonl", NotFoundError, ["not found"])
    _expect_error(tmp_path, StoreError, ["directory"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _expect_error(empty, StoreError, ["empty"])
    other = tmp_path / "other.jsonl"
    other.write_text('{"foo": 1}\n{"bar": 2}\n')
    _expect_error(other, StoreError, ["not a pi session, Claude Code or Codex transcript"])


def test_unreadable_file_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = PiSession().write(tmp_path / "locked.jsonl")
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads anything: simulate the refusal (the reader opens with os.open)
        real_open = os.open

        def refuse(name: Any, *args: Any, **kwargs: Any) -> Any:
            if Path(name) == path:
                raise PermissionError(13, "Permission denied", str(name))
            return real_open(name, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    try:
        _expect_error(path, StoreError, ["cannot read", "Permission denied"])
    finally:
        path.chmod(0o600)


def test_header_only_session_has_no_turns(tmp_path: Path) -> None:
    t = read_transcript(PiSession().write(tmp_path / "s.jsonl"))
    assert t.turns == () and t.format == "pi"
    assert "(no user or assistant turns on this branch)" in t.render()


def test_format_comes_from_content_not_file_name(tmp_path: Path) -> None:
    pi = PiSession()
    pi.user("hi", "u1")
    claude = ClaudeSession()
    claude.user("hi", "c-u1")
    assert read_transcript(pi.write(tmp_path / "transcript.txt")).format == "pi"
    named_like_pi = tmp_path / "2026-08-13T14-00-00-000Z_019a.jsonl"
    assert read_transcript(claude.write(named_like_pi)).format == "claude-code"


def test_legacy_v1_pi_session_reads_as_a_line(tmp_path: Path) -> None:
    lines = [
        {"type": "session", "id": "old", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2024-12-03T14:00:01.000Z", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "timestamp": "2024-12-03T14:00:02.000Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}},
    ]  # fmt: skip
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    t = read_transcript(path)
    assert [turn.text for turn in t.turns] == ["hi", "yo"]


def test_large_file_rereads_only_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = PiSession()
    blob = "y" * 2000
    for i in range(1500):
        s.user(f"q{i}", f"u{i:05d}")
        s.assistant(f"a{i}", f"a{i:05d}", tool_calls=[("read", {"path": f"f{i}.py"})])
        s.tool_result(blob, f"t{i:05d}")
    path = s.write(tmp_path / "big.jsonl")
    assert path.stat().st_size > 3_000_000
    reads: list[int] = []
    real = transcripts.read_at

    def counting(handle: object, offset: int) -> object:
        reads.append(offset)
        return real(handle, offset)  # type: ignore[arg-type]

    monkeypatch.setattr(transcripts, "read_at", counting)
    t = read_transcript(path, "a00700")
    assert conversation_ids(t) == [
        "u00699", "a00699", "u00700", "a00700", "u00701", "a00701", "u00702",
    ]  # fmt: skip
    assert len(reads) == len(t.turns)
    assert t.branch_entries == 4500


def test_an_entry_rewritten_under_the_reader_is_noted(
    linear: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = transcripts.read_at

    def rewritten(handle: object, offset: int) -> object:
        obj = real(handle, offset)  # type: ignore[arg-type]
        if isinstance(obj, dict) and obj.get("id") == "u9aaaa":
            obj["id"] = "other"
        return obj

    monkeypatch.setattr(transcripts, "read_at", rewritten)
    t = read_transcript(linear, limit=2)
    assert ids(t) == ["a9bbbb"]
    assert any("changed while the file was read" in note for note in t.notes)


def test_claude_file_opening_with_unfamiliar_metadata(tmp_path: Path) -> None:
    c = ClaudeSession()
    c.metadata({"type": "brand-new-metadata", "value": 1})
    c.user("hello", "cu1")
    t = read_transcript(c.write(tmp_path / "s.jsonl"))
    assert ids(t) == ["cu1"]
    assert "skipped 1 entry of unknown type: brand-new-metadata ×1" in t.notes


def test_to_json_shape(linear: Path) -> None:
    data = read_transcript(linear, "a4bbbb", context=1).to_json()
    assert data["format"] == "pi" and data["session_id"] == "019a2b3c-sess"
    assert data["target"] == "a4bbbb" and data["path"] == str(linear)
    first = data["turns"][1]
    assert set(first) >= {"id", "role", "time", "text", "tool_calls", "is_target"}
    assert first["is_target"] is True and first["role"] == "assistant"
    json.dumps(data)


# --- Claude Code -------------------------------------------------------------------


@pytest.fixture
def claude_path(tmp_path: Path) -> Iterator[Path]:
    c = ClaudeSession()
    c.metadata({"type": "summary", "summary": "Cache work", "leafUuid": "x"})
    c.metadata({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    c.user("<command-caveat>local command</command-caveat>", "meta1", isMeta=True)
    c.user("add a redis cache", "cu1")
    c.assistant([{"type": "thinking", "thinking": "PRIVATE", "signature": "sig"}], "msg_A", "ca1")
    c.assistant([{"type": "text", "text": "I'll look first."}], "msg_A", "ca2")
    c.assistant(
        [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "app.py"}}],
        "msg_A",
        "ca3",
    )
    c.tool_result("toolu_1", "FILE-CONTENTS")
    # A subagent's conversation hanging off the main chain, written later.
    c.assistant([{"type": "text", "text": "I found it."}], "msg_B", "ca4")
    main_leaf = c.leaf
    c.user("SIDECHAIN PROMPT", "side1", parent="ca4", sidechain=True, advance=False)
    c.assistant([{"type": "text", "text": "SIDECHAIN WORK"}], "msg_S", "side2", parent="side1", sidechain=True, advance=False)  # fmt: skip
    c.leaf = main_leaf
    c.compact("The user asked for a redis cache.")
    c.user("now add TTLs", "cu2")
    c.assistant([{"type": "text", "text": "TTLs set to 5 minutes."}], "msg_C", "ca5")
    c.user("SIDECHAIN TAIL", "side3", parent="side2", sidechain=True)
    yield c.write(tmp_path / "5d9c0e7a.jsonl")


def test_claude_live_branch_excludes_sidechains_and_walks_past_compaction(
    claude_path: Path,
) -> None:
    t = read_transcript(claude_path)
    assert t.format == "claude-code"
    assert t.session_id == "5d9c0e7a-1111-4222-8333-944455556666"
    text = t.render()
    assert "SIDECHAIN" not in text
    roles = [turn.role for turn in t.turns]
    assert roles == [
        "user",
        "assistant",
        "assistant",
        "compaction",
        "compaction",
        "user",
        "assistant",
    ]
    # The split reply (thinking, text, tool_use lines sharing msg_A) is one turn.
    reply = t.turns[1]
    assert reply.ids == ("ca1", "ca2", "ca3")
    assert reply.text == "I'll look first."
    assert [call.render() for call in reply.tool_calls] == ["Read(file_path=app.py)"]
    assert reply.folded_results == 1
    assert "PRIVATE" not in text and "FILE-CONTENTS" not in text and "command-caveat" not in text
    assert "conversation compacted (auto, 155025 tokens before)" in text
    assert "summary: This session is being continued" in text


@pytest.mark.parametrize(
    ("turn", "marked", "absent"),
    [
        ("ca2", "ca1", ["side1", "side2"]),  # a fragment of a split reply marks the whole turn
        ("ca4", "ca4", ["side1", "side2"]),  # sidechain children are not the continuation
        ("side1", "side1", ["cu2"]),  # a sidechain target shows its own chain
    ],
)
def test_claude_targets(claude_path: Path, turn: str, marked: str, absent: list[str]) -> None:
    t = read_transcript(claude_path, turn, context=10)
    assert target_ids(t) == [marked]
    for entry_id in absent:
        assert entry_id not in ids(t)


def test_claude_sidechain_target_follows_its_own_chain(claude_path: Path) -> None:
    t = read_transcript(claude_path, "side1", context=10)
    assert ids(t)[-3:] == ["side1", "side2", "side3"]
    assert any("sidechain" in note for note in t.notes)
