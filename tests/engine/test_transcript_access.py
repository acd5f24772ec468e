"""memory_transcript for an agent: only this project's sessions and anchored
transcripts (engine/recall/transcript_access.py); a person at the CLI names any file."""

from __future__ import annotations

from pathlib import Path

import pytest

from _transcript_builders import ClaudeSession, PiSession
from helpers import Cli, make_project, open_memory
from memlane.core.errors import NotFoundError
from memlane.core.types import Anchor
from memlane.engine.live.session import Session
from memlane.engine.project import Memory
from memlane.engine.recall.transcript_access import TranscriptNotAllowedError
from memlane.engine.tools.dispatch import Tools
from memlane.transcripts.locate import claude_project_dir_name, pi_session_dir_name


def _pi_transcript(path: Path, words: str) -> Path:
    session = PiSession("sess-" + path.stem)
    session.user(f"what about {words}?", "u0000001")
    session.assistant(f"{words} it is.", "a0000001")
    path.parent.mkdir(parents=True, exist_ok=True)
    return session.write(path)


def pi_dir(home: Path, project: Path) -> Path:
    return home / "pi-agent" / "sessions" / pi_session_dir_name(str(project))


def _show(tools: Tools, path: Path | str, **extra: str) -> str:
    return tools.call("memory_transcript", {"transcript_path": str(path), **extra}).text


def test_this_projects_pi_and_claude_sessions_are_shown(
    memory: Memory, project: Path, isolated_home: Path
) -> None:
    pi = _pi_transcript(pi_dir(isolated_home, project) / "one.jsonl", "redis ttls")
    claude_path = isolated_home / "claude" / "projects" / claude_project_dir_name(str(project))
    claude_path.mkdir(parents=True)
    claude = ClaudeSession()
    claude.user("which queue?")
    claude.assistant([{"type": "text", "text": "RabbitMQ stays."}])
    claude_file = claude.write(claude_path / "c.jsonl")
    tools = Tools(memory)
    assert "redis ttls it is." in _show(tools, pi)
    assert "RabbitMQ stays." in _show(tools, claude_file)


def test_another_projects_transcript_is_refused_with_why_and_how(
    memory: Memory, project: Path, tmp_path: Path, isolated_home: Path
) -> None:
    other = make_project(tmp_path, "other")
    theirs = _pi_transcript(pi_dir(isolated_home, other) / "secret.jsonl", "their launch plan")
    tools = Tools(memory)
    with pytest.raises(TranscriptNotAllowedError) as info:
        _show(tools, theirs)
    message = info.value.message
    assert str(theirs) in message and "not a known session transcript of this project" in message
    assert "\n" not in message and info.value.hint and "memory_expand" in info.value.hint
    # Walking out of this project's session directory is the same file, refused too.
    own_dir = pi_dir(isolated_home, project)
    own_dir.mkdir(parents=True)
    sneaky = own_dir / ".." / theirs.parent.name / theirs.name
    with pytest.raises(TranscriptNotAllowedError):
        _show(tools, sneaky)
    # A person at the CLI names a file they can read anyway: shown.
    assert "their launch plan it is." in _show(Tools(memory, caller_is_person=True), theirs)


def test_a_transcript_named_by_an_anchor_in_the_store_is_shown(
    memory: Memory, tmp_path: Path
) -> None:
    elsewhere = _pi_transcript(tmp_path / "archive" / "old.jsonl", "the old cache")
    stray = _pi_transcript(tmp_path / "archive" / "stray.jsonl", "nothing anchored")
    tools = Tools(memory)
    with pytest.raises(TranscriptNotAllowedError):
        _show(tools, elsewhere)
    memory.write("we chose the old cache", Anchor("sess-old", "a0000001", str(elsewhere)))
    assert "the old cache it is." in _show(tools, elsewhere, turn="a0000001")
    with pytest.raises(TranscriptNotAllowedError):
        _show(tools, stray)  # the same directory does not make it anchored


def test_the_live_sessions_own_transcript_is_shown(memory: Memory, tmp_path: Path) -> None:
    own = _pi_transcript(tmp_path / "custom-dir" / "live.jsonl", "this session")
    session = Session.start(memory, host="test", session_id="sess-live", transcript_path=str(own))
    try:
        assert "this session it is." in _show(Tools(memory, session), own)
        with pytest.raises(TranscriptNotAllowedError):
            _show(Tools(memory), own)  # without the session it is just some file
    finally:
        session.shutdown()


def test_a_cross_repo_transcript_needs_an_anchor_in_a_configured_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    root = tmp_path / "roots"
    cur, other = make_project(root, "cur"), make_project(root, "other")
    outside = make_project(tmp_path, "outside")
    transcript = _pi_transcript(tmp_path / "t" / "other.jsonl", "the other queue")
    for directory in (other, outside):
        with open_memory(directory) as mem:
            mem.write("the other queue", Anchor("sess-o", "a0000001", str(transcript)))
    monkeypatch.setenv("MEMLANE_SCAN_ROOTS", str(root))
    with open_memory(cur) as mem:
        tools = Tools(mem)
        with pytest.raises(TranscriptNotAllowedError):
            _show(tools, transcript)  # no project label: not this project's
        assert "the other queue it is." in _show(tools, transcript, project=str(other))
        with pytest.raises(TranscriptNotAllowedError, match="not under the configured scan roots"):
            _show(tools, transcript, project=str(outside))
        unanchored = _pi_transcript(pi_dir(isolated_home, other) / "o.jsonl", "unanchored")
        with pytest.raises(TranscriptNotAllowedError, match="not named by any anchor"):
            _show(tools, unanchored, project=str(other))


def test_the_cli_shows_any_regular_file_a_person_names(cli: Cli, tmp_path: Path) -> None:
    path = _pi_transcript(tmp_path / "anywhere" / "s.jsonl", "a person asked")
    shown = cli("transcript", str(path))
    assert shown.returncode == 0 and "a person asked it is." in shown.stdout


def test_a_transcript_is_shown_with_its_secrets_redacted(
    memory: Memory, project: Path, isolated_home: Path, cli: Cli
) -> None:
    # The host writes the conversation verbatim; L3 shows it through the scanner.
    from secret_fakes import CHANNEL_SAMPLE

    session = PiSession("sess-secrets")
    for n, case in enumerate(CHANNEL_SAMPLE):
        session.user(f"here it is: {case.text}", f"u{n:07d}")
        session.assistant(
            "done", f"a{n:07d}", tool_calls=[("bash", {"command": case.text, "cwd": "/srv"})]
        )
    directory = pi_dir(isolated_home, project)
    directory.mkdir(parents=True)
    path = session.write(directory / "secrets.jsonl")
    tools = Tools(memory)
    for shown in (
        _show(tools, path),
        str(tools.call("memory_transcript", {"transcript_path": str(path)}).details),
        cli("transcript", str(path), "--json").stdout,
    ):
        for case in CHANNEL_SAMPLE:
            assert case.secret not in shown, f"{case.name} shown by L3"
        assert "[REDACTED:" in shown


def test_a_link_in_this_projects_session_directory_does_not_open_another_project(
    memory: Memory, project: Path, tmp_path: Path, isolated_home: Path
) -> None:
    other = make_project(tmp_path, "other")
    theirs = _pi_transcript(pi_dir(isolated_home, other) / "secret.jsonl", "their launch plan")
    own_dir = pi_dir(isolated_home, project)
    own = _pi_transcript(own_dir / "mine.jsonl", "our own plan")
    planted = own_dir / "planted.jsonl"
    planted.symlink_to(theirs)
    tools = Tools(memory)
    for path in (planted, theirs):  # by the link, and by the real path it resolves to
        with pytest.raises(TranscriptNotAllowedError, match="not a known session transcript"):
            _show(tools, path)
    # A link that stays inside the directory is this project's own file.
    (own_dir / "alias.jsonl").symlink_to(own)
    assert "our own plan it is." in _show(tools, own_dir / "alias.jsonl")
    assert "our own plan it is." in _show(tools, own)


def test_a_home_reached_through_a_link_still_shows_this_projects_sessions(
    memory: Memory,
    project: Path,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # /home -> /var/home: the configured directory goes through a link.
    linked_home = tmp_path / "linked-home"
    linked_home.symlink_to(isolated_home)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(linked_home / "pi-agent"))
    path = _pi_transcript(pi_dir(linked_home, project) / "one.jsonl", "through the link")
    tools = Tools(memory)
    assert "through the link it is." in _show(tools, path)
    assert "through the link it is." in _show(tools, pi_dir(isolated_home, project) / "one.jsonl")


@pytest.mark.parametrize("caller_is_person", [False, True])
def test_a_nul_byte_in_the_transcript_path_is_one_line(
    memory: Memory, project: Path, isolated_home: Path, caller_is_person: bool
) -> None:
    own = _pi_transcript(pi_dir(isolated_home, project) / "mine.jsonl", "ours")
    tools = Tools(memory, caller_is_person=caller_is_person)
    with pytest.raises(NotFoundError) as info:
        _show(tools, f"{own}\0/../../etc/passwd")
    message = info.value.message
    assert "holds a NUL byte" in message and "\\x00" in message
    assert message.isprintable() and info.value.hint and "memory_expand" in info.value.hint


def test_a_nul_byte_in_a_project_label_is_one_line(memory: Memory, project: Path) -> None:
    tools = Tools(memory)
    calls = (
        ("memory_transcript", {"transcript_path": "/t/s.jsonl", "project": f"{project}\0x"}),
        ("memory_expand", {"chunk_hash": "abcdef12", "project": f"{project}\0x"}),
    )
    for name, arguments in calls:
        with pytest.raises(NotFoundError) as info:
            tools.call(name, arguments)
        assert "holds a NUL byte" in info.value.message and info.value.message.isprintable()
