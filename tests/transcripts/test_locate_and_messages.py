"""transcripts.locate (where transcripts live) and the message-by-message
readers the sessions layer and the topic search share."""

from __future__ import annotations

import json
from pathlib import Path

from memlane.transcripts import claude, locate, pi
from memlane.transcripts.formats import format_of, sniff
from memlane.transcripts.message import ASSISTANT, SUMMARY, TOOL, USER, Message, Skip
from memlane.transcripts.model import CLAUDE_CODE, PI


def _write(path: Path, *objs: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def test_roots_follow_the_environment_and_its_home(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert locate.pi_agent_dir(env) == tmp_path / ".pi" / "agent"
    assert locate.claude_dir(env) == tmp_path / ".claude"
    assert locate.pi_flat_session_dir(env) is None
    env |= {locate.PI_AGENT_DIR_ENV: "~/agent", locate.CLAUDE_CONFIG_DIR_ENV: "/etc/cc"}
    assert locate.pi_agent_dir(env) == tmp_path / "agent"
    assert locate.claude_dir(env) == Path("/etc/cc")
    assert locate.pi_project_dir("/w/app", env) == tmp_path / "agent" / "sessions" / "--w-app--"
    assert locate.claude_project_dir("/w/a.b", env) == Path("/etc/cc/projects/-w-a-b")


def test_discover_sources_reads_the_flat_pi_directory_by_header_cwd(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    flat = tmp_path / "flat"
    _write(flat / "mine.jsonl", {"type": "session", "id": "s1", "cwd": str(project)})
    _write(flat / "theirs.jsonl", {"type": "session", "id": "s2", "cwd": "/elsewhere"})
    claude_file = _write(
        locate.claude_project_dir(str(project), {"HOME": str(tmp_path)}) / "c.jsonl",
        {"type": "user", "uuid": "u1", "message": {"content": "hi"}},
    )
    env = {"HOME": str(tmp_path), locate.PI_SESSION_DIR_ENV: str(flat)}
    found = locate.discover_sources([project], env)
    assert found == [
        locate.Source(claude_file, CLAUDE_CODE),
        locate.Source(flat / "mine.jsonl", PI),
    ]
    assert locate.format_of_path(claude_file) == CLAUDE_CODE


def test_session_files_linked_from_elsewhere_are_not_this_projects(tmp_path: Path) -> None:
    # A link planted in one project's session directory must not make another
    # project's transcript its own (sessions index, L3); the flat directory
    # filters by header, and a link there to a file outside is skipped too.
    env = {"HOME": str(tmp_path)}
    project, other = tmp_path / "app", tmp_path / "other"
    header = {"type": "session", "id": "s", "cwd": str(project)}
    own_dir = locate.pi_project_dir(str(project), env)
    mine = _write(own_dir / "mine.jsonl", header)
    theirs = _write(locate.pi_project_dir(str(other), env) / "theirs.jsonl", header)
    (own_dir / "planted.jsonl").symlink_to(theirs)
    (own_dir / "alias.jsonl").symlink_to(mine)  # inside the directory: kept
    assert [s.path for s in locate.discover_sources([project], env)] == [
        own_dir / "alias.jsonl",
        mine,
    ]
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "planted.jsonl").symlink_to(theirs)
    flat_env = {**env, locate.PI_SESSION_DIR_ENV: str(flat)}
    assert locate.discover_sources([project], flat_env) == []
    # A session directory reached through a link (a home under /var/home) lists its files.
    (tmp_path / "linked").symlink_to(own_dir)
    assert locate.jsonl_files(tmp_path / "linked") == [
        tmp_path / "linked" / "alias.jsonl",
        tmp_path / "linked" / "mine.jsonl",
    ]


def test_formats_are_told_by_their_first_telling_line() -> None:
    header = {"type": "session", "version": 3, "id": "s"}
    assert format_of(header) == PI
    assert format_of({"type": "summary", "leafUuid": "x"}) == CLAUDE_CODE
    assert sniff([None, {"type": "other"}, header]) == PI
    assert sniff([{"type": "other"}] * 60 + [header]) is None


def test_pi_messages() -> None:
    assert pi.message({"type": "session", "id": "s"}) is Skip.SILENT
    assert pi.message({"type": "model_change", "id": "a1"}) is Skip.SILENT
    assert pi.message({"type": "mystery", "id": "a1"}) is Skip.UNKNOWN
    assert pi.message({"type": "message", "message": {"role": "user"}}) is Skip.UNKNOWN
    reply = pi.message(
        {
            "type": "message",
            "id": "a2",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "done"},
                    {"type": "toolCall", "name": "bash", "arguments": {"cmd": "ls"}},
                ],
            },
        }
    )
    assert isinstance(reply, Message)
    assert (reply.role, reply.text, reply.timestamps[0]) == (
        ASSISTANT,
        "done",
        "2026-01-01T00:00:00Z",
    )
    assert [(c.name, c.args) for c in reply.calls] == [("bash", {"cmd": "ls"})]
    result = pi.message(
        {
            "type": "message",
            "id": "a3",
            "message": {"role": "toolResult", "toolName": "bash", "content": "out"},
        }
    )
    assert isinstance(result, Message)
    assert (result.role, result.tool, [o.text for o in result.outputs]) == (TOOL, "bash", ["out"])
    summary = pi.message({"type": "compaction", "id": "a4", "summary": "so far"})
    assert isinstance(summary, Message) and (summary.role, summary.text) == (SUMMARY, "so far")


def test_claude_messages() -> None:
    assert claude.message({"type": "file-history-snapshot"}) is Skip.SILENT
    assert claude.message({"type": "user", "uuid": "u", "isMeta": True}) is Skip.SILENT
    assert claude.message({"type": "user"}) is Skip.UNKNOWN
    assert claude.message({"type": "brand-new"}) is Skip.UNKNOWN
    said = claude.message(
        {"type": "user", "uuid": "u1", "isSidechain": True, "message": {"content": "hello"}}
    )
    assert isinstance(said, Message)
    assert (said.role, said.text, said.sidechain) == (USER, "hello", True)
    results = claude.message(
        {
            "type": "user",
            "uuid": "u2",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text"}]},
                ]
            },
        }
    )
    assert isinstance(results, Message) and results.role == TOOL
    assert [(o.text, o.call_id) for o in results.outputs] == [("ok", "t1"), ("", "t2")]
