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
from memlane.engine.recall.transcript_search import search_sessions
from memlane.engine.shared.tool_catalog import (
    MEMORY_TOPIC_SPEC,
    TOPIC_ACTION_ARGUMENTS,
    topic_action_usage,
)
from memlane.engine.shared.tool_spec import ToolResult, check_arguments
from memlane.store import safe_paths
from memlane.store import topics as store_topics
from memlane.store.layout import MEMORY_INDEX, TOPICS_DIR

if TYPE_CHECKING:
    from memlane.engine.shared.ports import ProjectMemory
    from memlane.store.topics import TopicChange, TopicInfo

# Chunks asked of the index per topic search; several chunks of one entry
# collapse into one result.
TOPIC_SEARCH_K = 20


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
    mem.internals.note_written(change.path)  # a search in this session indexes it first
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
    mem.internals.note_written(change.path)
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


# --- the tool -------------------------------------------------------------------------------


def _require(action: str, args: Mapping[str, Any], *names: str) -> None:
    missing = [n for n in names if not str(args.get(n) or "").strip()]
    if missing:
        raise MemlaneError(
            f"memory_topic {action} needs {', '.join(missing)}", topic_action_usage(action)
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
            from memlane.store.redaction import redaction_notice

            text += f"\n{redaction_notice(change.redactions)}"
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
    needs, takes = TOPIC_ACTION_ARGUMENTS[action]
    _ignored(action, args, {*needs, *takes})
    _require(action, args, *needs)
    if action == "add":
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
        change, notices = remove_entry(mem, entry=args["entry"], sync=sync)
        details = change.to_json() | {"notices": notices}
        return ToolResult(render_change(change, notices), details)
    if action == "list":
        infos = list_all(mem)
        max_lines, max_bytes = _limits(mem)
        usage = store_topics.index_usage(mem.scope.store, max_lines, max_bytes)
        details = {
            "topics": [info.to_json() for info in infos],
            "index_usage": usage.to_json(),
            # The WARNING sentence with its fix, for hosts whose model sees only this JSON.
            "capacity_problem": usage.problem(),
            "enabled": mem.config.topics.enabled,
        }
        return ToolResult(render_list(infos, usage), details)
    from memlane.store.secret_screen import redacted_for_display

    # The query is echoed back ('matches "…"'): never a key pasted into it.
    query = redacted_for_display(args["query"])
    if args.get("scope", "memory") == "sessions":
        found = search_sessions(mem, query)
        return ToolResult(found.render(), found.to_json())
    topic_search = search_memory(mem, query, sync=sync)
    return ToolResult(topic_search.render(), topic_search.to_json())
