"""The ``memory_topic`` tool: curated knowledge (pi-memory's ``memory`` tool).

``add`` / ``remove`` / ``list`` work on the topic files through
``memlane.store.topics``; ``search`` looks either in the topic files (scope
``memory``, through the index with ``kind="topic"``, answering with whole
``##`` entry blocks) or in this project's past agent sessions (scope
``sessions``, a plain scan of pi's and Claude Code's transcript files).

After an add or a remove the index is brought up to date here
(``Memory.sync``) unless the caller says a live session's indexer will do
it (``sync=False``; the changed topic file is noted as a fresh write, so a
search in the session indexes it first); an index failure never undoes the
write, it only adds a notice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.core.regular_file import FileTooLargeError, NotRegularFileError
from memlane.engine.tools.spec import (
    MEMORY_TOPIC_SPEC,
    ToolResult,
    check_arguments,
)
from memlane.store import safe_paths
from memlane.store import topics as store_topics
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR

if TYPE_CHECKING:
    from memlane.engine.ports import ProjectMemory
    from memlane.store.topics import TopicChange, TopicInfo
    from memlane.transcripts.message import Message, Skip

# Chunks asked of the index per topic search; several chunks of one entry
# collapse into one result.
TOPIC_SEARCH_K = 20
SNIPPET_CHARS = 240


# --- add / remove / list --------------------------------------------------------------------


def _limits(mem: ProjectMemory) -> tuple[int, int]:
    settings = mem.config.topics
    return settings.mem_index_max_lines, settings.mem_index_max_bytes


def _sync(mem: ProjectMemory, sync: bool) -> list[str]:
    if not sync:
        return []
    try:
        return list(mem.sync(quiet_when_idle=True).notices)
    except MemlaneError as exc:
        return [f"the topic file was saved but the index was not updated ({exc.message})"]


def add_entry(
    mem: ProjectMemory,
    *,
    content: str,
    topic: str,
    title: str,
    type: str | None = None,
    sync: bool = True,
) -> tuple[TopicChange, list[str]]:
    """Save one entry; refused while the topic layer is switched off."""
    if not mem.config.topics.enabled:
        raise MemlaneError(
            "the topic memory is switched off (topics.enabled = false)",
            "turn it on with `memlane memory on`",
        )
    max_lines, max_bytes = _limits(mem)
    change = store_topics.add(
        mem.scope.store,
        content=content,
        topic=topic,
        title=title,
        type=type,
        today=mem.clock.today(),
        max_lines=max_lines,
        max_bytes=max_bytes,
    )
    mem.note_written(change.path)  # a search in this session indexes it first
    return change, _sync(mem, sync)


def remove_entry(
    mem: ProjectMemory, *, entry: str, sync: bool = True
) -> tuple[TopicChange, list[str]]:
    """Delete one entry by exact title (allowed even when switched off: cleaning up)."""
    max_lines, max_bytes = _limits(mem)
    change = store_topics.remove(
        mem.scope.store,
        entry=entry,
        today=mem.clock.today(),
        max_lines=max_lines,
        max_bytes=max_bytes,
    )
    mem.note_written(change.path)
    return change, _sync(mem, sync)


def list_all(mem: ProjectMemory) -> list[TopicInfo]:
    return store_topics.list_topics(mem.scope.store)


# --- search: topic files --------------------------------------------------------------------


@dataclass(frozen=True)
class TopicMatch:
    score: float
    chunk_hash: str
    name: str
    slug: str
    path: str
    type: str
    title: str  # "" for a match in the frontmatter (name/description)
    block: str

    def to_json(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 6),
            "chunk_hash": self.chunk_hash,
            "name": self.name,
            "slug": self.slug,
            "file": f"{TOPICS_DIR}/{self.slug}.md",
            "path": self.path,
            "type": self.type,
            "title": self.title,
            "block": self.block,
        }


@dataclass
class TopicSearch:
    query: str
    mode: str
    matches: list[TopicMatch] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": "memory",
            "query": self.query,
            "mode": self.mode,
            "matches": [m.to_json() for m in self.matches],
            "notices": list(self.notices),
        }

    def render(self) -> str:
        if not self.matches:
            text = f'No topic entry matches "{self.query}".'
        else:
            parts = [
                f"{len(self.matches)} topic entr{'y' if len(self.matches) == 1 else 'ies'} "
                f'for "{self.query}" ({self.mode}):'
            ]
            for m in self.matches:
                where = f"{TOPICS_DIR}/{m.slug}.md ({m.type})"
                if m.title:
                    parts.append(f"\n[{where}] score {m.score:.2f}\n{m.block.rstrip()}")
                else:
                    parts.append(f"\n[{where}] score {m.score:.2f} — topic description\n{m.block}")
            text = "\n".join(parts)
        for notice in self.notices:
            text += f"\nnote: {notice}"
        return text


def search_memory(mem: ProjectMemory, query: str, *, sync: bool = True) -> TopicSearch:
    """Topic entries for *query*, best first, each as its whole ``##`` block."""
    result = mem.search(query, TOPIC_SEARCH_K, kind="topic", sync=sync)
    out = TopicSearch(query=query, mode=result.mode, notices=list(result.notices))
    index_file = os.path.realpath(mem.scope.store / MEMORY_INDEX)
    parsed_cache: dict[str, store_topics.TopicFile | None] = {}
    seen: set[tuple[str, str]] = set()
    for hit in result.hits:
        if os.path.realpath(hit.source) == index_file:
            continue  # MEMORY.md only repeats titles
        if hit.source not in parsed_cache:
            try:
                # Never through a link: the hit's file may have become one.
                parsed_cache[hit.source] = store_topics.TopicFile.parse(
                    safe_paths.read_text(mem.scope.store, Path(hit.source))
                )
            except (OSError, UnicodeDecodeError, MemlaneError):
                parsed_cache[hit.source] = None
        parsed = parsed_cache[hit.source]
        if parsed is None:
            continue
        slug = Path(hit.source).stem
        entry = store_topics.entry_at_line(parsed, hit.start_line)
        title = entry.title if entry is not None else ""
        if (hit.source, title) in seen:
            continue
        seen.add((hit.source, title))
        name = parsed.get("name") or slug
        if entry is not None:
            block = entry.text.rstrip("\n") + "\n"
        else:
            block = (
                f"{name}: {parsed.get('description') or ''} (entries: "
                + "; ".join(parsed.titles)
                + ")"
            )
        out.matches.append(
            TopicMatch(
                score=hit.score,
                chunk_hash=hit.chunk_hash,
                name=name,
                slug=slug,
                path=hit.source,
                type=parsed.get("type") or store_topics.DEFAULT_TYPE,
                title=title,
                block=block,
            )
        )
    return out


# --- search: past sessions ------------------------------------------------------------------


def session_files(cwds: list[str], env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """(host, file) of every transcript of these project directories, newest first."""
    # Imported here: the tool catalog imports this module at start-up, and
    # only a session search reads transcripts.
    from memlane.transcripts import locate
    from memlane.transcripts.model import CLAUDE_CODE, PI

    environ = os.environ if env is None else env
    found: dict[Path, str] = {}
    for cwd in dict.fromkeys(cwds):
        for host, directory in (
            (PI, locate.pi_project_dir(cwd, environ)),
            (CLAUDE_CODE, locate.claude_project_dir(cwd, environ)),
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

    def mtime(item: tuple[Path, str]) -> float:
        try:
            return item[0].stat().st_mtime
        except OSError:
            return 0.0

    return [(host, path) for path, host in sorted(found.items(), key=mtime, reverse=True)]


@dataclass(frozen=True)
class SessionMatch:
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
class SessionSearch:
    query: str
    scanned: list[str] = field(default_factory=list)
    matches: list[SessionMatch] = field(default_factory=list)
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
) -> SessionSearch:
    """Messages of this project's newest sessions that contain every query word
    (case-insensitive), newest first."""
    from memlane.transcripts.formats import message_reader
    from memlane.transcripts.jsonl import open_transcript_file, parse_line

    settings = mem.config.topics
    max_sessions = settings.session_search_max_sessions if max_sessions is None else max_sessions
    max_matches = settings.session_search_max_matches if max_matches is None else max_matches
    terms = [t for t in query.lower().split() if t]
    out = SessionSearch(query=query)
    if not terms:
        raise MemlaneError("search needs a query", "pass the words to look for")
    cwds = [str(mem.scope.repository_dir), str(mem.scope.scope)]
    cwds += [os.path.realpath(c) for c in cwds]
    for host, path in session_files(cwds, env)[: max(max_sessions, 0)]:
        out.scanned.append(str(path))
        found: list[SessionMatch] = []
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
                        found.append(
                            SessionMatch(
                                host, str(path), entry_id, when, role, _snippet(text, terms)
                            )
                        )
        except (OSError, NotRegularFileError, FileTooLargeError):
            continue  # gone, unreadable, or a FIFO/device that would block the search
        for match in reversed(found):
            if len(out.matches) >= max_matches:
                out.truncated = True
                return out
            out.matches.append(match)
    return out


# --- the tool -------------------------------------------------------------------------------


def _require(action: str, args: Mapping[str, Any], *names: str) -> None:
    missing = [n for n in names if not str(args.get(n) or "").strip()]
    if missing:
        raise MemlaneError(
            f"memory_topic {action} needs {', '.join(missing)}",
            {
                "add": "add takes content, topic and title (and optionally type)",
                "remove": "remove takes entry: the exact title of the entry",
                "search": "search takes query (and optionally scope memory or sessions)",
            }.get(action),
        )


def _ignored(action: str, args: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(args) - allowed - {"action"})
    if extra:
        raise MemlaneError(
            f"memory_topic {action} does not take {', '.join(extra)}",
            f"{action} takes: {', '.join(sorted(allowed)) or 'nothing else'}",
        )


def render_change(change: TopicChange, notices: list[str]) -> str:
    where = f"{TOPICS_DIR}/{change.slug}.md"
    if change.action == "added":
        text = (
            f'Saved "{change.title}" to {where}'
            + (" (new topic)" if change.created_file else "")
            + f", type {change.type}.\nMEMORY.md: {change.index_line}"
        )
        if change.redactions:
            text += f"\n{change.redactions} secret(s) were redacted before saving."
    else:
        text = f'Removed "{change.title}" from {where}.'
        text += (
            " It was the topic's last entry: the file and its MEMORY.md line are gone."
            if change.deleted_file
            else f"\nMEMORY.md: {change.index_line}"
        )
        text += "\nThis is the only remaining copy:\n\n" + change.entry.rstrip()
    problem = change.capacity_problem
    if problem:
        text += f"\n\nWARNING: {problem}"
    for notice in notices:
        text += f"\nnote: {notice}"
    return text


def render_list(infos: list[TopicInfo], usage: store_topics.IndexUsage) -> str:
    if not infos:
        return "No topics yet. Save one with memory_topic add (content, topic, title)."
    lines = [
        f"{len(infos)} topic(s); MEMORY.md {usage.lines}/{usage.max_lines} lines, "
        f"{usage.bytes}/{usage.max_bytes} bytes:"
    ]
    for info in infos:
        lines.append(
            f"\n{info.name} — {TOPICS_DIR}/{info.slug}.md ({info.type}, updated "
            f"{info.updated or 'unknown'})"
        )
        if info.description:
            lines.append(f"  {info.description}")
        lines.extend(f"  ## {title}" for title in info.titles)
    problem = usage.problem()
    if problem:
        lines.append(f"\nWARNING: {problem}")
    return "\n".join(lines)


def topic_tool(
    mem: ProjectMemory, arguments: Mapping[str, Any] | None, *, sync: bool = True
) -> ToolResult:
    """``memory_topic``: validate, dispatch on ``action``, render.

    ``sync=False`` when a live session's indexer keeps the index current.
    """
    args = check_arguments(MEMORY_TOPIC_SPEC, arguments)
    action = args["action"]
    if action == "add":
        _ignored(action, args, {"content", "topic", "title", "type"})
        _require(action, args, "content", "topic", "title")
        change, notices = add_entry(
            mem,
            content=args["content"],
            topic=args["topic"],
            title=args["title"],
            type=args.get("type"),
            sync=sync,
        )
        details = change.to_json() | {"notices": notices}
        return ToolResult(render_change(change, notices), details)
    if action == "remove":
        _ignored(action, args, {"entry"})
        _require(action, args, "entry")
        change, notices = remove_entry(mem, entry=args["entry"], sync=sync)
        details = change.to_json() | {"notices": notices}
        return ToolResult(render_change(change, notices), details)
    if action == "list":
        _ignored(action, args, set())
        infos = list_all(mem)
        max_lines, max_bytes = _limits(mem)
        usage = store_topics.index_usage(mem.scope.store, max_lines, max_bytes)
        details = {
            "topics": [info.to_json() for info in infos],
            "index_usage": usage.to_json(),
            "enabled": mem.config.topics.enabled,
        }
        return ToolResult(render_list(infos, usage), details)
    _ignored(action, args, {"query", "scope"})
    _require(action, args, "query")
    if args.get("scope", "memory") == "sessions":
        found = search_sessions(mem, args["query"])
        return ToolResult(found.render(), found.to_json())
    topic_search = search_memory(mem, args["query"], sync=sync)
    return ToolResult(topic_search.render(), topic_search.to_json())
