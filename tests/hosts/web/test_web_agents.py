"""The viewer says which agent each session came from, through the real server.

``memlane ui`` runs as a process on 127.0.0.1; its Sessions, Session and Day
pages are fetched over HTTP for a project with a pi session (_web.py's) and
a Claude Code session, and each names its agent. A format the viewer has no
name for (another host's reader) is shown as the sessions layer records it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from _web import SESSION_ID, build_web_store

from _transcript_builders import ClaudeSession
from helpers import MEMLANE, FixedClock, wait_for
from memlane.hosts.web.render import agent_label
from memlane.transcripts.locate import claude_project_dir

CLAUDE_ID = "5d9c0e7a-1111-4222-8333-94445555web1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def served(project: Path, clock: FixedClock, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``memlane ui`` over a project with a pi and a Claude Code session: its
    signed-in base URL, and the Claude Code transcript."""
    build_web_store(project, clock).memory.close()
    claude = ClaudeSession(CLAUDE_ID)
    claude.user("why does the nightly export time out on Sundays")
    claude.assistant("The Sunday export also vacuums the database; I moved the vacuum to 03:00.")
    folder = claude_project_dir(str(project))
    folder.mkdir(parents=True, exist_ok=True)
    transcript = claude.write(folder / f"{CLAUDE_ID}.jsonl")
    opened = tmp_path / "opened.txt"
    recorder = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
    port = _free_port()
    process = subprocess.Popen(
        [*MEMLANE, "-C", str(project), "ui", "--port", str(port), "--open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "BROWSER": f"{sys.executable} -c {recorder!r} %s"},
    )
    try:
        wait_for(lambda: opened.exists() and opened.read_text(), timeout=60, what="ui started")
        redirect = Path(opened.read_text().strip().removeprefix("file://")).read_text()
        found = re.search(rf'url=(http://127\.0\.0\.1:{port}/[\w-]{{20,}}/)"', redirect)
        assert found is not None, redirect
        yield found.group(1), transcript
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode("utf-8"))


@pytest.mark.subprocess
def test_the_session_pages_name_the_agent_of_each_session(served: tuple[str, Path]) -> None:
    base, claude_transcript = served
    # The viewer catches up with the sessions in the background once it listens.
    wait_for(
        lambda: CLAUDE_ID in _get(base + "sessions") and SESSION_ID in _get(base + "sessions"),
        timeout=60,
        what="both sessions are listed",
    )
    listing = _get(base + "sessions")
    assert "<th>agent</th>" in listing
    cells = {}
    for session in (SESSION_ID, CLAUDE_ID):
        row = re.search(rf">{re.escape(session)}</a></td><td>(.*?)</td><td>(.*?)</td>", listing)
        assert row is not None, listing
        cells[session] = row.groups()
    assert cells[SESSION_ID][0] == '<span class="agent agent-pi">pi</span>'
    assert cells[CLAUDE_ID][0] == '<span class="agent agent-claude-code">Claude Code</span>'
    page = _get(base + "session?transcript=" + quote(str(claude_transcript), safe=""))
    assert '<span class="agent agent-claude-code">Claude Code</span>' in page
    assert "vacuums the database" in page
    found = _get(base + "search?kind=session&q=" + quote("nightly export Sundays"))
    assert '<span class="agent agent-claude-code">Claude Code</span>' in found, found
    # The Day page of the Claude Code session's first message lists it with its agent.
    day = _get(base + "day/" + cells[CLAUDE_ID][1][:10])
    assert re.search(rf">{CLAUDE_ID}</a> <span class=\"agent agent-claude-code\">", day), day


def test_an_agent_the_viewer_has_no_name_for_shows_as_recorded() -> None:
    assert agent_label("codex") == '<span class="agent agent-codex">Codex</span>'
    assert agent_label("opencode") == '<span class="agent agent-opencode">OpenCode</span>'
    assert agent_label("zed<b>") == '<span class="agent agent-zedb">zed&lt;b&gt;</span>'
    assert agent_label(None) == '<span class="agent agent-unknown">unknown agent</span>'
