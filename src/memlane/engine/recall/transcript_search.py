"""``memory_topic`` action ``search_sessions``: a plain-text search of the raw transcripts.

What pi-memory's session search does: the words of the query, matched in
the messages of this project's pi and Claude Code transcripts, newest
session first — no index, so it finds a message from a minute ago as well
as one the sessions layer has not ingested. The sessions layer
(engine/sessions/) is the indexed, ranked search of the same messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.transcripts.message import Message, Skip

SNIPPET_CHARS = 240


def session_files(cwds: list[str], env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """(host, file) of every transcript of these project directories, newest first."""
    # Imported here: the tool catalog imports this module at start-up, and
    # only a session search reads transcripts.
    from memlane.transcripts import codex, locate
    from memlane.transcripts.model import CLAUDE_CODE, CODEX, OPENCODE, PI

    environ = os.environ if env is None else env
    found: dict[Path, str] = {}
    for cwd in dict.fromkeys(cwds):
        for host, directory in (
            (PI, locate.pi_project_dir(cwd, environ)),
            (CLAUDE_CODE, locate.claude_project_dir(cwd, environ)),
            (OPENCODE, locate.opencode_copy_dir(cwd, environ)),
        ):
            for path in locate.jsonl_files(directory):
                found.setdefault(path, host)
    custom = locate.pi_flat_session_dir(environ)
    if custom is not None:
        # A custom pi session directory is shared by every project: keep the
        # files whose header names one of ours.
        wanted = {os.path.realpath(c) for c in cwds}
        for path in locate.jsonl_files(custom):
            header_cwd = locate.pi_header_cwd(path)
            if header_cwd is not None and os.path.realpath(header_cwd) in wanted:
                found.setdefault(path, PI)
    for path in codex.project_files(cwds, environ):
        found.setdefault(path, CODEX)

    def mtime(item: tuple[Path, str]) -> float:
        try:
            return item[0].stat().st_mtime
        except OSError:
            return 0.0

    return [(host, path) for path, host in sorted(found.items(), key=mtime, reverse=True)]


@dataclass(frozen=True)
class TranscriptMatch:
    host: str
    session_file: str
    entry_id: str
    time: str
    role: str
    snippet: str

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "session_file": self.session_file,
            "entry_id": self.entry_id,
            "time": self.time,
            "role": self.role,
            "snippet": self.snippet,
        }


@dataclass
class TranscriptSearch:
    query: str
    scanned: list[str] = field(default_factory=list)
    matches: list[TranscriptMatch] = field(default_factory=list)
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": "sessions",
            "query": self.query,
            "scanned_sessions": list(self.scanned),
            "matches": [m.to_json() for m in self.matches],
            "truncated": self.truncated,
        }

    def render(self) -> str:
        if not self.scanned:
            return (
                "No past sessions of this project were found (looked for pi sessions under "
                "~/.pi/agent/sessions/ and Claude Code transcripts under ~/.claude/projects/)."
            )
        if not self.matches:
            return (
                f"No message in the {len(self.scanned)} newest session(s) of this project "
                f'matches "{self.query}".'
            )
        lines = [
            f'{len(self.matches)} message(s) matching "{self.query}" in the '
            f"{len(self.scanned)} newest session(s), newest first:"
        ]
        for n, m in enumerate(self.matches, 1):
            lines.append(f"\n{n}. {m.time or '(no time)'} · {m.role} · {m.host}")
            lines.append(f"   transcript: {m.session_file}")
            lines.append(f"   turn: {m.entry_id}")
            lines.append(f"   {m.snippet}")
        if self.truncated:
            lines.append("\n(more matches exist; refine the query)")
        lines.append(
            "\nRead the conversation around a match with memory_transcript "
            "(transcript_path = the transcript, turn = the turn)."
        )
        return "\n".join(lines)


def _message_of(read: Message | Skip) -> tuple[str, str, str, str] | None:
    """(role, entry id, time, text) of a user/assistant message with text
    (not a subagent's), else None."""
    from memlane.transcripts.message import ASSISTANT, USER, Skip

    if isinstance(read, Skip) or read.role not in (USER, ASSISTANT) or read.sidechain:
        return None
    if not read.text.strip():
        return None
    stamp = read.timestamps[0] if read.timestamps else None
    return read.role, read.entry_id, _format_time(stamp), read.text


def _format_time(stamp: object) -> str:
    from datetime import datetime

    if isinstance(stamp, int | float):
        try:
            return datetime.fromtimestamp(stamp / 1000).astimezone().strftime("%Y-%m-%d %H:%M")
        except (OverflowError, OSError, ValueError):
            return ""
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return stamp
        return parsed.astimezone().strftime("%Y-%m-%d %H:%M")
    return ""


def _snippet(text: str, terms: list[str]) -> str:
    flat = " ".join(text.split())
    lower = flat.lower()
    at = min((lower.find(t) for t in terms if lower.find(t) >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 3)
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start > 0 else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def search_sessions(
    mem: ProjectMemory,
    query: str,
    *,
    max_sessions: int | None = None,
    max_matches: int | None = None,
    env: Mapping[str, str] | None = None,
) -> TranscriptSearch:
    """Messages of this project's newest sessions that contain every query word
    (case-insensitive), newest first."""
    from memlane.transcripts.formats import message_reader
    from memlane.transcripts.jsonl import open_transcript_file, parse_line

    settings = mem.config.topics
    max_sessions = settings.session_search_max_sessions if max_sessions is None else max_sessions
    max_matches = settings.session_search_max_matches if max_matches is None else max_matches
    from memlane.store.redaction import redact

    terms = [t for t in query.lower().split() if t]
    out = TranscriptSearch(query=query)
    if not terms:
        raise MemlaneError("search needs a query", "pass the words to look for")
    cwds = [str(mem.scope.repository_dir), str(mem.scope.scope)]
    cwds += [os.path.realpath(c) for c in cwds]
    for host, path in session_files(cwds, env)[: max(max_sessions, 0)]:
        out.scanned.append(str(path))
        found: list[TranscriptMatch] = []
        read = message_reader(host)
        try:
            with open_transcript_file(path) as handle:
                for raw in handle:
                    obj = parse_line(raw)
                    if obj is None:
                        continue
                    message = _message_of(read(obj))
                    if message is None:
                        continue
                    role, entry_id, when, text = message
                    lower = text.lower()
                    if all(t in lower for t in terms):
                        # The transcript is the host's, verbatim: a key pasted
                        # into the conversation is replaced before it is shown.
                        shown = _snippet(redact(text).text, terms)
                        found.append(TranscriptMatch(host, str(path), entry_id, when, role, shown))
        except (OSError, NotRegularFileError, FileTooLargeError):
            continue  # gone, unreadable, or a FIFO/device that would block the search
        for match in reversed(found):
            if len(out.matches) >= max_matches:
                out.truncated = True
                return out
            out.matches.append(match)
    return out
