"""The memory_topic tool (engine/topics/ops.py) on a real Memory, lexical only (no model).

The root fixtures isolate the agents' session directories (``PI_CODING_AGENT_DIR``
and ``CLAUDE_CONFIG_DIR`` point into the test's ``MEMLANE_HOME``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers import NOW, FixedClock, IndexWriteLock, open_memory
from memlane.core.errors import MemlaneError, NotFoundError
from memlane.engine.project import Memory
from memlane.engine.shared.tool_outputs import output_schema
from memlane.engine.tools.dispatch import Tools
from memlane.engine.topics import ops as E
from memlane.transcripts.locate import claude_project_dir_name, pi_session_dir_name


def call(mem: Memory, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = E.topic_tool(mem, arguments)
    return result.text, result.details


def test_spec_is_a_valid_tool_schema() -> None:
    schema = E.MEMORY_TOPIC_SPEC.json_schema()
    assert E.MEMORY_TOPIC_SPEC.name == "memory_topic"
    assert schema["required"] == ["action"]
    assert set(schema["properties"]) == {
        "action",
        "content",
        "topic",
        "title",
        "type",
        "entry",
        "query",
        "scope",
    }
    assert schema["properties"]["action"]["enum"] == ["add", "remove", "list", "search"]
    assert schema["properties"]["scope"]["enum"] == ["memory", "sessions"]


def test_add_is_indexed_as_topic_and_search_returns_whole_entries(memory: Memory) -> None:
    text, details = call(
        memory,
        action="add",
        content="staging uses port 2222, key at ~/.ssh/staging",
        topic="debugging.md",
        title="SSH Gotcha",
    )
    assert 'Saved "SSH Gotcha" to topics/debugging.md (new topic)' in text
    assert details["index_line"] == "- [Debugging](topics/debugging.md) — SSH Gotcha"
    long_body = "\n\n".join(
        f"paragraph {i} about the mysql timeout " + "x" * 200 for i in range(12)
    )
    call(memory, action="add", content=long_body, topic="debugging.md", title="MySQL Timeout")
    call(memory, action="add", content="the timeout is in the journal too", topic="j", title="J")
    memory.write("a journal entry mentioning the mysql timeout")

    hits = memory.search("staging port", 10, kind="topic", sync=False)
    assert hits.hits and all("/topics/" in h.source for h in hits.hits)
    # MEMORY.md is not indexed: it only repeats titles.
    assert not [f for f in memory.index.files() if f.endswith("MEMORY.md")]

    text, details = call(memory, action="search", query="mysql timeout")
    titles = [m["title"] for m in details["matches"]]
    assert titles.count("MySQL Timeout") == 1  # many chunks, one entry
    match = next(m for m in details["matches"] if m["title"] == "MySQL Timeout")
    assert match["block"].startswith("## MySQL Timeout\nparagraph 0")
    assert "paragraph 11" in match["block"]  # the whole block, not a chunk
    assert all(m["path"].endswith(".md") and "/topics/" in m["path"] for m in details["matches"])
    assert "journal entry" not in text
    assert "## MySQL Timeout" in text


def test_remove_updates_the_index_and_suggests_close_titles(memory: Memory) -> None:
    call(memory, action="add", content="kiwi grows on vines", topic="fruit", title="Kiwi")
    call(memory, action="add", content="mango is sweet", topic="fruit", title="Mango")
    assert call(memory, action="search", query="kiwi")[1]["matches"]
    with pytest.raises(NotFoundError) as err:
        call(memory, action="remove", entry="Kiwii")
    assert "'Kiwi'" in str(err.value.hint)
    text, details = call(memory, action="remove", entry="Kiwi")
    assert "only remaining copy" in text and "kiwi grows on vines" in text
    assert details["index_line"] == "- [Fruit](topics/fruit.md) — Mango"
    assert call(memory, action="search", query="kiwi")[1]["matches"] == []
    text, details = call(memory, action="remove", entry="Mango")
    assert details["deleted_file"] and "file and its MEMORY.md line are gone" in text
    assert memory.search("mango", 5, kind="topic").hits == []


def test_list_shows_topics_and_usage(memory: Memory) -> None:
    assert "No topics yet" in call(memory, action="list")[0]
    call(memory, action="add", content="uses tabs", topic="Preferences", title="Tabs", type="user")
    text, details = call(memory, action="list")
    assert "Preferences — topics/preferences.md (user, updated" in text and "## Tabs" in text
    assert details["topics"][0]["entries"] == ["Tabs"]
    assert details["index_usage"]["lines"] == 1 and details["enabled"] is True
    assert details["capacity_problem"] is None


def test_capacity_problem_is_in_the_tool_text(project: Path, clock: FixedClock) -> None:
    with open_memory(project, clock=clock, MEMLANE_TOPICS_MEM_INDEX_MAX_LINES="1") as mem:
        call(mem, action="add", content="a", topic="one", title="A")
        text, details = call(mem, action="add", content="b", topic="two", title="B")
        assert "WARNING: MEMORY.md is over capacity: 2 lines (limit 1)" in text
        assert "memlane dream" in details["capacity_problem"]
        assert (mem.scope.store / "topics" / "two.md").is_file()
        # list says it too, in the JSON a host's model may see alone
        text, details = call(mem, action="list")
        assert f"WARNING: {details['capacity_problem']}" in text
        assert "memlane dream" in details["capacity_problem"]
        assert "topics.mem_index_max_lines" in details["capacity_problem"]
        assert "saved" not in details["capacity_problem"]  # nothing was, by a list
        declared = output_schema("memory_topic")["properties"]["capacity_problem"]
        assert declared["type"] == ["string", "null"]


def test_switched_off_refuses_adds_but_lists_and_removes(project: Path, clock: FixedClock) -> None:
    with open_memory(project, clock=clock) as mem:
        call(mem, action="add", content="a", topic="one", title="A")
    with open_memory(project, clock=clock, MEMLANE_TOPICS_ENABLED="false") as mem:
        with pytest.raises(MemlaneError, match="switched off") as err:
            call(mem, action="add", content="b", topic="one", title="B")
        assert "memlane memory on" in str(err.value.hint)
        listed = call(mem, action="list")[1]
        assert listed["enabled"] is False and listed["topics"][0]["entries"] == ["A"]
        _, details = call(mem, action="remove", entry="A")
        assert details["deleted_file"]
        assert not (mem.scope.store / "topics" / "one.md").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "add", "topic": "t", "title": "x"}, "add needs content"),
        ({"action": "add", "content": "c"}, "add needs topic, title"),
        (
            {"action": "add", "content": "c", "topic": "t", "title": "x", "entry": "e"},
            "does not take entry",
        ),
        ({"action": "remove"}, "remove needs entry"),
        ({"action": "search"}, "search needs query"),
        ({"action": "list", "query": "q"}, "does not take query"),
        ({"action": "drop"}, "action must be one of"),
        ({"action": "search", "query": "q", "scope": "web"}, "scope must be one of"),
        (
            {"action": "add", "content": "c", "topic": "t", "title": "x", "type": "x"},
            "type must be",
        ),
        ({"action": "add", "content": "c", "topic": "../x", "title": "x"}, "path separator"),
        ({}, "missing required argument 'action'"),
    ],
)
def test_bad_calls_get_clear_errors(
    memory: Memory, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(MemlaneError, match=message):
        E.topic_tool(memory, arguments)


def test_an_index_failure_keeps_the_write(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    import memlane.index.sqlite.notes

    # Set before the index is opened: its connection takes the busy wait then.
    monkeypatch.setattr(memlane.index.sqlite.notes, "BUSY_TIMEOUT_S", 0.2)
    memory.sync()  # the index exists; another process now holds its write lock
    with IndexWriteLock(memory.internals.index_path):
        text, _ = call(memory, action="add", content="kept", topic="t", title="K")
    assert "the topic file was saved but the index was not updated" in text
    assert "locked by another process" in text
    assert (memory.scope.store / "topics" / "t.md").is_file()
    assert memory.search("kept", kind="topic").hits  # the next sync catches up


# --- scope sessions ---------------------------------------------------------------------------


def _pi_session(path: Path, cwd: str, messages: list[tuple[str, str, str]]) -> None:
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "11111111-2222-3333-4444-555555555555",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": cwd,
        }
    ]
    parent = None
    for n, (entry_id, role, text) in enumerate(messages):
        body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            body |= {"provider": "x", "model": "y", "stopReason": "stop"}
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-11-30T10:0{n}:00.000Z",
                "message": body,
            }
        )
        parent = entry_id
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")


def test_session_dir_encodings() -> None:
    assert pi_session_dir_name("/home/dev/fernbill") == "--home-dev-fernbill--"
    assert pi_session_dir_name("C:\\work\\app") == "--C--work-app--"
    assert claude_project_dir_name("/home/u/my.proj_x") == "-home-u-my-proj-x"


def test_sessions_scope_finds_messages_newest_first_and_chains_into_transcript(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "pi-agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    cwd = str(project)
    pi_dir = agent / "sessions" / pi_session_dir_name(cwd)
    old = pi_dir / "2026-11-29T10-00-00_old.jsonl"
    _pi_session(old, cwd, [("aaaa0001", "user", "why is the Redis cache slow?")])
    new = pi_dir / "2026-11-30T10-00-00_new.jsonl"
    _pi_session(
        new,
        cwd,
        [
            ("bbbb0001", "user", "set the redis TTL to five minutes"),
            ("bbbb0002", "assistant", "Done: the Redis cache TTL is now 300 s."),
            ("bbbb0003", "user", "unrelated question"),
        ],
    )
    # Fixed modification times (no wall clock): new, then old 100 s before.
    written = NOW.timestamp()
    os.utime(new, (written, written))
    os.utime(old, (written - 100, written - 100))
    _pi_session(
        agent / "sessions" / "--other-project--" / "x.jsonl",
        "/other",
        [("cccc0001", "user", "redis elsewhere")],
    )
    claude_file = claude / "projects" / claude_project_dir_name(cwd) / "c.jsonl"
    claude_file.parent.mkdir(parents=True)
    claude_file.write_text(
        json.dumps(
            {
                "type": "user",
                "uuid": "dddd-1",
                "parentUuid": None,
                "sessionId": "s",
                "timestamp": "2026-11-28T09:00:00Z",
                "message": {"role": "user", "content": "redis from claude code"},
            }
        )
        + "\n"
        + json.dumps(
            {
                "type": "user",
                "uuid": "dddd-2",
                "isSidechain": True,
                "message": {"role": "user", "content": "redis in a subagent"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    os.utime(claude_file, (written - 200, written - 200))
    with open_memory(project) as mem:
        text, details = call(mem, action="search", query="REDIS", scope="sessions")
        got = [(m["entry_id"], m["role"], m["host"]) for m in details["matches"]]
        assert got == [
            ("bbbb0002", "assistant", "pi"),
            ("bbbb0001", "user", "pi"),
            ("aaaa0001", "user", "pi"),
            ("dddd-1", "user", "claude-code"),
        ]
        assert len(details["scanned_sessions"]) == 3
        assert "memory_transcript" in text and str(new) in text and "turn: bbbb0002" in text
        first = details["matches"][0]
        assert "Redis cache TTL" in first["snippet"] and first["time"].startswith("2026-11-30")

        both = call(mem, action="search", query="redis ttl", scope="sessions")[1]
        assert [m["entry_id"] for m in both["matches"]] == ["bbbb0002", "bbbb0001"]

        limited = E.search_sessions(mem, "redis", max_sessions=1, max_matches=1)
        assert [m.entry_id for m in limited.matches] == ["bbbb0002"] and limited.truncated
        assert len(limited.scanned) == 1

        transcript = Tools(mem).call(
            "memory_transcript",
            {"transcript_path": first["session_file"], "turn": first["entry_id"]},
        )
        assert "Redis cache TTL is now 300 s" in transcript.text


def test_sessions_scope_without_sessions_says_where_it_looked(memory: Memory) -> None:
    text, details = call(memory, action="search", query="anything", scope="sessions")
    assert "No past sessions of this project were found" in text
    assert details["matches"] == []


def test_custom_pi_session_dir_is_filtered_by_header_cwd(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    custom = tmp_path / "sessions"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(custom))
    _pi_session(custom / "mine.jsonl", str(project), [("eeee0001", "user", "deploy on fridays")])
    _pi_session(custom / "theirs.jsonl", "/elsewhere", [("ffff0001", "user", "deploy on mondays")])
    with open_memory(project) as mem:
        details = call(mem, action="search", query="deploy", scope="sessions")[1]
        assert [m["entry_id"] for m in details["matches"]] == ["eeee0001"]


def test_config_has_every_pi_memory_setting_with_its_default() -> None:
    from memlane.core.config import load_config
    from memlane.core.settings import TopicSettings

    topics = load_config(env={}).topics
    assert topics == TopicSettings()
    assert (topics.enabled, topics.mem_index_max_lines, topics.mem_index_max_bytes) == (
        True,
        200,
        25600,
    )
    assert (topics.dream_nudge_after_sessions, topics.dream_nudge_after_hours) == (5, 24.0)
    assert (topics.dream_think_level, topics.auto_surfacing_think_level) == ("high", "off")
    assert (topics.session_search_max_sessions, topics.session_search_max_matches) == (10, 5)
    assert (
        topics.auto_surfacing_enabled,
        topics.auto_surfacing_max_files,
        topics.auto_surfacing_max_topic_bytes,
        topics.auto_surfacing_max_injection_bytes,
    ) == (True, 5, 4096, 20480)
    assert (
        topics.extract_memories_enabled,
        topics.extract_memories_think_level,
        topics.extract_memories_max_context_tokens,
    ) == (True, "high", 2000)
    assert topics.model_for("dream") is None

    env = {"MEMLANE_TOPICS_MODEL": "cheap/one", "MEMLANE_DREAM_MODEL": "big/two"}
    tuned = load_config(env=env).topics
    assert tuned.model_for("dream") == "big/two"
    assert tuned.model_for("auto_surfacing") == "cheap/one"
    unknown = load_config(env={"MEMLANE_DREAM_THINK_LEVEL": "max"})
    assert unknown.topics.dream_think_level == "high"  # not used: said instead
    assert "it must be one of off, minimal" in unknown.problems[0]
